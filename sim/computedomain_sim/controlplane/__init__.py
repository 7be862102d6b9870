"""A real Kubernetes control plane for the simulated cluster (``--control-plane kube``): etcd,
kube-apiserver, kube-controller-manager and kube-scheduler as processes, their certificates, and
where ``make kube-bins`` put the programs."""
