"""The simulated kube-controller-manager: DaemonSet, Deployment, ReplicaSet, Job, StatefulSet,
resourceclaim and pod GC controllers, each a pure plan module and a ``*_controller`` loop."""
