"""Talking to a Kubernetes API server: client factory, JSON-dict REST, informers, work queue,
read-your-writes cache, leader election, events. No ComputeDomain logic."""
