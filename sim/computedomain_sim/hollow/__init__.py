"""Hollow nodes: many nodes' kubelet plugin and daemon logic in one process, for scale tests."""
