"""The StatefulSet controller's decisions: pods with stable names ``<set>-<ordinal>``, created in
order (``OrderedReady``: each once every lower ordinal is running and ready) or all at once
(``Parallel``), removed from the highest ordinal down, and replaced one at a time from the
highest ordinal when the template changes (``RollingUpdate`` above ``partition``; ``OnDelete``
leaves them), with the status kube-controller-manager writes.

Called by :mod:`.statefulset_controller` with a snapshot from its informers. Pure. The revision
is a hash of the template (the ``controller-revision-hash`` label); no ControllerRevision
objects and no volume claim templates.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from .daemonset import CreatePod, DeletePod
from .deployment import template_hash

__all__ = ["StatefulSetPlan", "plan"]

Obj = Mapping[str, Any]
REVISION_LABEL: Final = "controller-revision-hash"
POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"


@attrs.frozen
class StatefulSetPlan:
    creates: tuple[CreatePod, ...]
    deletes: tuple[DeletePod, ...]
    status: dict[str, Any]


def _ordinal(set_name: str, pod: Obj) -> int | None:
    name = str((pod.get("metadata") or {}).get("name", ""))
    prefix = f"{set_name}-"
    suffix = name[len(prefix) :] if name.startswith(prefix) else ""
    return int(suffix) if suffix.isdigit() else None


def _ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def plan(sts: Obj, pods: Sequence[Obj]) -> StatefulSetPlan:
    """Decide creates, deletes and status for ``sts`` given the pods it controls. Pure."""
    meta = sts.get("metadata") or {}
    spec = sts.get("spec") or {}
    name = str(meta.get("name", ""))
    wanted = int(spec.get("replicas", 1))
    revision = f"{name}-{template_hash(spec.get('template') or {})}"
    ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
    by_ordinal: dict[int, Obj] = {}
    for pod in pods:
        ordinal = _ordinal(name, pod)
        if ordinal is not None:
            by_ordinal[ordinal] = pod
    live = {i: p for i, p in by_ordinal.items() if not p["metadata"].get("deletionTimestamp")}
    creates: list[CreatePod] = []
    deletes: list[DeletePod] = []
    if not meta.get("deletionTimestamp"):
        for ordinal in range(wanted):
            if ordinal in by_ordinal:
                pod = by_ordinal[ordinal]
                if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
                    deletes.append(_delete(pod, "the pod exited"))
                    if ordered:
                        break
                elif ordered and not _ready(pod):
                    break
                continue
            creates.append(CreatePod("", _pod(sts, ordinal, revision)))
            if ordered:
                break
        surplus = sorted((i for i in live if i >= wanted), reverse=True)
        if surplus and not creates:
            deletes.append(_delete(live[surplus[0]], "more replicas than wanted"))
            if not ordered:
                deletes += [_delete(live[i], "more replicas than wanted") for i in surplus[1:]]
        strategy = spec.get("updateStrategy") or {}
        partition = int((strategy.get("rollingUpdate") or {}).get("partition", 0))
        settled = not creates and not deletes and all(_ready(live[i]) for i in live if i < wanted)
        if strategy.get("type", "RollingUpdate") == "RollingUpdate" and settled:
            outdated = [
                i for i in sorted(live, reverse=True)
                if partition <= i < wanted and _revision(live[i]) != revision
            ]  # fmt: skip
            if outdated:
                deletes.append(_delete(live[outdated[0]], "the pod template changed"))
    current = [p for i, p in live.items() if i < wanted]
    updated = sum(1 for p in current if _revision(p) == revision)
    ready = sum(1 for p in current if _ready(p))
    status: dict[str, Any] = {
        "observedGeneration": int(meta.get("generation") or 1),
        "replicas": len(live),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "currentReplicas": updated,
        "updatedReplicas": updated,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
    }
    return StatefulSetPlan(tuple(creates), tuple(deletes), status)


def _revision(pod: Obj) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL, ""))


def _pod(sts: Obj, ordinal: int, revision: str) -> dict[str, Any]:
    spec = sts.get("spec") or {}
    template = copy.deepcopy(dict(spec.get("template") or {}))
    smeta = sts.get("metadata") or {}
    name = f"{smeta.get('name', '')}-{ordinal}"
    meta = dict(template.get("metadata") or {})
    meta["name"] = name
    meta["namespace"] = smeta.get("namespace", "default")
    meta["labels"] = {
        **(meta.get("labels") or {}),
        REVISION_LABEL: revision,
        POD_NAME_LABEL: name,
        POD_INDEX_LABEL: str(ordinal),
    }
    meta["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": smeta.get("name", ""),
            "uid": smeta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    pod_spec = dict(template.get("spec") or {})
    pod_spec.setdefault("hostname", name)
    if spec.get("serviceName"):
        pod_spec.setdefault("subdomain", spec["serviceName"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}


def _delete(pod: Obj, reason: str) -> DeletePod:
    meta = pod["metadata"]
    return DeletePod(meta.get("namespace", ""), meta["name"], meta.get("uid", ""), reason)
