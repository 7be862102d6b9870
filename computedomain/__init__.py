"""computedomain: ComputeDomains for Kubernetes (multi-node NVLink / IMEX), in Python.

Three programs share this package: ``cd-controller`` (:mod:`computedomain.controller`),
``cd-kubelet-plugin`` (:mod:`computedomain.kubeletplugin`) and ``cd-imex-daemon``
(:mod:`computedomain.daemon`). The embedded simulated cluster lives in
:mod:`computedomain_sim`. The public surface is kept small: the version, the API models
and errors plugins need live in :mod:`computedomain.api`, the hook specifications in
:mod:`computedomain.policies.hookspecs`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
