"""The zero values kube-apiserver never returns: it decodes a built-in object into its Go type
and encodes it again, so a field tagged ``omitempty`` that is not a pointer disappears when it
holds its zero value (``false``, ``0``, ``""``, an empty list or map). A client that sends one
(``kubectl create`` sends ``stdin: false``; a manifest may say ``labels: {}``) reads the object
back without it, on kube-apiserver and here.

Only such fields are listed: a pointer field (``replicas``, ``enableServiceLinks``) keeps an
explicit zero. ``metadata``'s apply to every kind, custom resources included (their metadata is
decoded as ObjectMeta too). Called by :mod:`.admission`; mutates in place.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_ZEROS: tuple[Any, ...] = (False, 0, "", None)

METADATA = ("labels", "annotations", "finalizers", "ownerReferences", "generateName")
_POD_SPEC = (
    "hostNetwork", "hostPID", "hostIPC", "nodeName", "hostname", "subdomain",
    "priorityClassName", "volumes", "initContainers", "imagePullSecrets", "tolerations",
    "nodeSelector", "ephemeralContainers",
)  # fmt: skip
_CONTAINER = (
    "stdin", "stdinOnce", "tty", "workingDir", "args", "command", "env", "envFrom", "ports",
    "volumeMounts",
)  # fmt: skip
_SPECS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("minReadySeconds", "paused"),
    ("apps", "DaemonSet"): ("minReadySeconds",),
    ("apps", "StatefulSet"): ("minReadySeconds", "serviceName"),
    ("", "Service"): (
        "healthCheckNodePort",
        "publishNotReadyAddresses",
        "externalName",
        "loadBalancerIP",
        "externalIPs",
        "loadBalancerSourceRanges",
    ),
}
_TOP: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "ConfigMap"): ("data", "binaryData"),
    ("", "Secret"): ("data", "stringData"),
}


def _empty(value: Any) -> bool:
    return value in _ZEROS or value in ({}, [])


def _drop(obj: Any, fields: Iterable[str]) -> None:
    if isinstance(obj, dict):
        for field in fields:
            if field in obj and _empty(obj[field]):
                del obj[field]


def _pod_spec(spec: Any) -> None:
    _drop(spec, _POD_SPEC)
    if isinstance(spec, dict):
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                _drop(container, _CONTAINER)


def drop_zero_values(group: str, kind: str, obj: dict[str, Any], *, builtin: bool) -> None:
    """Remove the omitted zero values of ``obj`` (of ``group``/``kind``) in place."""
    _drop(obj.get("metadata"), METADATA)
    if not builtin:
        return
    _drop(obj, _TOP.get((group, kind), ()))
    spec = obj.get("spec")
    _drop(spec, _SPECS.get((group, kind), ()))
    if kind == "Service" and isinstance(spec, dict):
        for port in spec.get("ports") or ():
            _drop(port, ("nodePort",))
    if kind == "Pod":
        _pod_spec(spec)
    elif isinstance(spec, dict):
        template = spec.get("template")
        if isinstance(template, dict):
            _drop(template.get("metadata"), METADATA)
            _pod_spec(template.get("spec"))
