"""Read-only accessors for the JSON dicts the controller keeps of objects it does not model.

DaemonSets, ResourceClaimTemplates, pods and nodes stay plain dicts (as the informers deliver
them); the planners read a few metadata fields and pod status fields through these functions so
that a missing key never raises. Pure functions; nothing here changes an object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from computedomain.api import names

JsonObject = Mapping[str, Any]


def _meta(obj: JsonObject) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def name(obj: JsonObject) -> str:
    return str(_meta(obj).get("name") or "")


def namespace(obj: JsonObject) -> str:
    return str(_meta(obj).get("namespace") or "")


def uid(obj: JsonObject) -> str:
    return str(_meta(obj).get("uid") or "")


def resource_version(obj: JsonObject) -> str:
    return str(_meta(obj).get("resourceVersion") or "")


def labels(obj: JsonObject) -> Mapping[str, str]:
    value = _meta(obj).get("labels")
    return value if isinstance(value, Mapping) else {}


def label(obj: JsonObject, key: str) -> str | None:
    """The label's value, ``""`` when set empty, None when absent."""
    value = labels(obj).get(key)
    return None if value is None else str(value)


def domain_uid(obj: JsonObject) -> str | None:
    """The ComputeDomain UID an object is labelled with, or None (absent or empty)."""
    return label(obj, names.COMPUTE_DOMAIN_LABEL) or None


def finalizers(obj: JsonObject) -> tuple[str, ...]:
    value = _meta(obj).get("finalizers")
    return tuple(str(f) for f in value) if isinstance(value, list | tuple) else ()


def has_finalizer(obj: JsonObject) -> bool:
    return names.FINALIZER in finalizers(obj)


def terminating(obj: JsonObject) -> bool:
    """True once the object has a ``deletionTimestamp``."""
    return bool(_meta(obj).get("deletionTimestamp"))


def key(obj: JsonObject) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (the informer store key)."""
    ns = namespace(obj)
    return f"{ns}/{name(obj)}" if ns else name(obj)


# --- pods ------------------------------------------------------------------------------------


def pod_node(pod: JsonObject) -> str:
    """The node a pod runs on, or is bound for.

    ``spec.nodeName`` once bound; before that the DaemonSet controller's node affinity
    (``matchFields metadata.name In [node]``) names the node; "" when neither is known.
    """
    spec = pod.get("spec") or {}
    bound = spec.get("nodeName")
    if bound:
        return str(bound)
    terms = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or []:
            values = field.get("values") or []
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and values:
                return str(values[0])
    return ""


def pod_ip(pod: JsonObject) -> str:
    return str((pod.get("status") or {}).get("podIP") or "")


def pod_phase(pod: JsonObject) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def pod_finished(pod: JsonObject) -> bool:
    """True for pods in a terminal phase: their daemon is not running any more."""
    return pod_phase(pod) in ("Succeeded", "Failed")


def pod_conditions(pod: JsonObject) -> list[Mapping[str, Any]]:
    value = (pod.get("status") or {}).get("conditions") or []
    return [c for c in value if isinstance(c, Mapping)]


def pod_ready(pod: JsonObject) -> bool:
    """The pod's ``Ready`` condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in pod_conditions(pod))


def pod_fabric(pod: JsonObject) -> bool:
    """Fabric-attached unless the daemon labelled the pod with an empty clique ID.

    An absent label means the daemon has not labelled its pod yet: such a pod counts as fabric
    so that its node is not dropped too early (docs/compatibility.md#status-aggregation).
    """
    return label(pod, names.CLIQUE_LABEL) != ""
