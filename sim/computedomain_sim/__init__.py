"""The embedded simulated cluster: API server, scheduler, controllers, kubelets, IMEX stand-ins."""
