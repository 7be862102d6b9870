"""computedomain: ComputeDomains for Kubernetes (multi-node NVLink / IMEX), in Python.

Three programs share this package: ``cd-controller`` (:mod:`computedomain.controller`),
``cd-kubelet-plugin`` (:mod:`computedomain.kubeletplugin`) and ``cd-imex-daemon``
(:mod:`computedomain.daemon`). The embedded simulated cluster lives in
:mod:`computedomain_sim`. The public surface is kept small: the version here, and for plugin
authors what :mod:`computedomain.policies` declares in its ``__all__`` (the hook specifications,
the requests their policies receive, the error for a bad setting).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
