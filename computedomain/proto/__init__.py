"""Kubelet protocol .proto files written from the field tables, and their generated stubs."""
