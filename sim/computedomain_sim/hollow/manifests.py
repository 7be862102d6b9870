"""What a hollow cluster installs from ``deployments/``, and the settings it takes from there.

Called by :mod:`computedomain_sim.cli.sim_hollow` and ``bench/scale.py``. Everything the manifests
define is installed (namespace, CRDs, RBAC, DeviceClasses, policies) except the two workloads:
the controller Deployment (the controller runs as its own process, started by the caller) and
the kubelet plugin DaemonSet (the plugins are hollow, in-process). Their containers' plain
``env`` values are returned so that both run with the settings the manifests give them
(feature gates, node limit, verbosity...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from computedomain.kube.rest import Api
from computedomain_sim.cluster import install, kustomize
from computedomain_sim.cluster.cluster import DEFAULT_MANIFESTS

__all__ = ["Manifests", "install_manifests", "load"]

WORKLOADS = ("Deployment", "DaemonSet")


@attrs.frozen
class Manifests:
    """The objects to install, and the plain env of the controller and the plugin."""

    objects: tuple[Mapping[str, Any], ...]
    controller_env: Mapping[str, str]
    plugin_env: Mapping[str, str]


def _plain_env(obj: Mapping[str, Any]) -> dict[str, str]:
    containers = obj["spec"]["template"]["spec"].get("containers") or []
    return {
        str(e["name"]): str(e["value"])
        for c in containers[:1]
        for e in c.get("env") or []
        if "value" in e and "$(" not in str(e["value"])
    }


def load(directory: Path = DEFAULT_MANIFESTS) -> Manifests:
    """Render the kustomization (built-in renderer). Raises KustomizeError."""
    objects = kustomize.render(directory, use_kubectl=False)
    controller: dict[str, str] = {}
    plugin: dict[str, str] = {}
    for obj in objects:
        if obj.get("kind") == "Deployment":
            controller = _plain_env(obj)
        elif obj.get("kind") == "DaemonSet":
            plugin = _plain_env(obj)
    kept = tuple(o for o in objects if o.get("kind") not in WORKLOADS)
    return Manifests(kept, controller, plugin)


async def install_manifests(api: Api, objects: Sequence[Mapping[str, Any]]) -> None:
    """Create or replace the objects (waits for CRDs). Raises InstallError or API errors."""
    await install.install(api, objects)
