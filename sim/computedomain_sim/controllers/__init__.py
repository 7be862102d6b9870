"""The simulated kube-controller-manager: DaemonSet, Deployment, resourceclaim and pod GC
controllers, each a pure plan module and a ``*_controller`` loop."""
