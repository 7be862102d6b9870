"""Defaults of the ``sim`` commands that their flag parsers need.

Kept apart from :mod:`.cluster` because a parser is built before anything runs: ``sim up`` and
``sim down`` only start or stop the background process, and should not pay for importing the
whole simulation (API server, kubelets, the Kubernetes client) to learn a default path.
"""

from __future__ import annotations

import enum
from pathlib import Path

import computedomain

__all__ = ["DEFAULT_MANIFESTS", "ControlPlane"]

# The kustomization the simulation installs: deployments/ with the simulation's overlay.
DEFAULT_MANIFESTS = (
    Path(computedomain.__file__).resolve().parents[1] / "deployments" / "overlays" / "sim"
)


class ControlPlane(enum.StrEnum):
    """What runs the cluster's API, scheduling and controllers: the simulation's own API server,
    scheduler and controllers in the cluster's process (``embedded``), or etcd, kube-apiserver,
    kube-scheduler and kube-controller-manager as programs (``kube``, built by
    ``make kube-bins``). The nodes are the simulated kubelets either way."""

    EMBEDDED = "embedded"
    KUBE = "kube"
