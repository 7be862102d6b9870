"""A whole simulated cluster: manifests (kustomize), topology, state directory, the in-process
orchestrator and the background service behind ``computedomain sim up|status|down``."""
