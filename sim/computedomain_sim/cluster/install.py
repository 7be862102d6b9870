"""Apply rendered manifests to the API server, as ``kubectl apply`` would for new objects.

Called by :mod:`.cluster` with the objects :mod:`.kustomize` rendered from ``deployments/``.
Objects are created in the order given (kustomize's: namespaces and CRDs first); an object that
exists is replaced (its resourceVersion carried over), so installing twice is harmless. After
the CRDs it waits until each is Established, so later objects may use them.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from computedomain.kube import errors
from computedomain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, Resource
from computedomain.kube.rest import Api

__all__ = ["InstallError", "install", "resource_of"]

_PLURALS = {
    "Namespace": ("namespaces", False),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "ServiceAccount": ("serviceaccounts", True),
    "Role": ("roles", True),
    "ClusterRole": ("clusterroles", False),
    "RoleBinding": ("rolebindings", True),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "Deployment": ("deployments", True),
    "DaemonSet": ("daemonsets", True),
    "ValidatingAdmissionPolicy": ("validatingadmissionpolicies", False),
    "ValidatingAdmissionPolicyBinding": ("validatingadmissionpolicybindings", False),
    "NetworkPolicy": ("networkpolicies", True),
    "DeviceClass": ("deviceclasses", False),
    "ConfigMap": ("configmaps", True),
    "Secret": ("secrets", True),
}


_POLL = 0.05


class InstallError(RuntimeError):
    """A manifest that cannot be installed; names the object."""


def resource_of(obj: Mapping[str, Any]) -> Resource:
    """The REST resource of a manifest object. Pure. Raises :class:`InstallError` for a kind the
    installer does not know."""
    kind = str(obj.get("kind", ""))
    if kind not in _PLURALS:
        msg = f"{kind} {obj.get('metadata', {}).get('name')}: kind not known to the installer"
        raise InstallError(msg)
    plural, namespaced = _PLURALS[kind]
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return Resource(group, version, plural, kind, namespaced)


async def install(api: Api, objects: Sequence[Mapping[str, Any]], *, within: float = 30.0) -> None:
    """Create or replace every object, waiting for CRDs to be Established. Raises
    :class:`InstallError` or API errors."""
    crds: list[str] = []
    for obj in objects:
        resource = resource_of(obj)
        body = copy.deepcopy(dict(obj))
        meta = body.get("metadata") or {}
        try:
            await api.create(resource, body)
        except errors.AlreadyExists:
            current = await api.get(resource, meta["name"], meta.get("namespace"))
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await api.update(resource, body)
        except errors.ApiError as exc:
            msg = f"installing {obj.get('kind')} {meta.get('name')}: {exc}"
            raise InstallError(msg) from exc
        if resource.kind == "CustomResourceDefinition":
            crds.append(str(meta["name"]))
    for name in crds:
        await _wait_established(api, name, within)


async def _wait_established(api: Api, name: str, within: float) -> None:
    polls = max(1, int(within / _POLL))
    for _ in range(polls):
        if _established(await api.get(CUSTOM_RESOURCE_DEFINITIONS, name)):
            return
        await asyncio.sleep(_POLL)
    msg = f"CustomResourceDefinition {name} is not Established after {within:g}s"
    raise InstallError(msg)


def _established(crd: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )
