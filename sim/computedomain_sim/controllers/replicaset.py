"""The ReplicaSet controller's decisions: keep ``spec.replicas`` active pods of the template,
remove the surplus in kube-controller-manager's order (unscheduled before scheduled, pending
before running, not ready before ready, newest first), and report the status it writes
(``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas``,
``terminatingReplicas``, ``observedGeneration``).

Called by :mod:`.replicaset_controller` with a snapshot from its informers. Pure. A pod that
exited (``Succeeded``/``Failed``) is deleted and replaced; kube-controller-manager leaves it to
the pod garbage collector's threshold (docs/embedded-apiserver.md#known-differences).
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from . import names
from .daemonset import CreatePod, DeletePod

__all__ = ["ReplicaSetPlan", "available", "plan", "ready"]

Obj = Mapping[str, Any]
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


@attrs.frozen
class ReplicaSetPlan:
    """Pods to create and delete, the status to write, and when (seconds from now) a ready
    pod becomes available, so the status must be written again (None: nothing pending)."""

    creates: tuple[CreatePod, ...]
    deletes: tuple[DeletePod, ...]
    status: dict[str, Any]
    recheck: float | None = None


def _ready_since(pod: Obj) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "True":
            return str(c.get("lastTransitionTime") or "")
    return None


def ready(pod: Obj) -> bool:
    return _ready_since(pod) is not None


def _seconds_until_available(pod: Obj, min_ready: int, now: float) -> float | None:
    """0 if available, the seconds left if ready but not for long enough, None if not ready."""
    since = _ready_since(pod)
    if since is None:
        return None
    if min_ready <= 0 or not since:
        return 0.0
    try:
        at = dt.datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
    return max(at + min_ready - now, 0.0)


def available(pod: Obj, min_ready: int, now: float) -> bool:
    """Ready for at least ``min_ready`` seconds at ``now`` (epoch seconds)."""
    return _seconds_until_available(pod, min_ready, now) == 0.0


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _deletion_order(pod: Obj) -> tuple[int, int, int]:
    """Smaller first: kube-controller-manager's ranking of the pods to remove on scale down
    (the creation time is applied separately, newest first)."""
    return (
        1 if (pod.get("spec") or {}).get("nodeName") else 0,
        _PHASE_RANK.get(str((pod.get("status") or {}).get("phase") or "Pending"), 0),
        1 if ready(pod) else 0,
    )


def plan(rs: Obj, pods: Sequence[Obj], suffixes: Sequence[str], now: float) -> ReplicaSetPlan:
    """Decide creates, deletes and status. ``pods``: the pods it controls; ``suffixes``: enough
    random name suffixes for the pods to create; ``now``: epoch seconds. Pure."""
    meta = rs.get("metadata") or {}
    spec = rs.get("spec") or {}
    wanted = int(spec.get("replicas", 1))
    min_ready = int(spec.get("minReadySeconds") or 0)
    terminating = [p for p in pods if (p.get("metadata") or {}).get("deletionTimestamp")]
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    exited = [p for p in live if _terminal(p)]
    active = [p for p in live if not _terminal(p)]
    deletes = [_delete(p, "the pod exited") for p in exited]
    creates: list[CreatePod] = []
    if len(active) > wanted:
        newest_first = sorted(
            active, key=lambda p: str(p["metadata"].get("creationTimestamp", "")), reverse=True
        )
        surplus = sorted(newest_first, key=_deletion_order)[: len(active) - wanted]
        deletes += [_delete(p, "more replicas than wanted") for p in surplus]
    elif len(active) < wanted and not meta.get("deletionTimestamp"):
        base = f"{meta.get('name', '')}-"
        creates = [
            CreatePod("", _pod(rs, names.with_suffix(base, suffixes[i])))
            for i in range(wanted - len(active))
        ]
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    waits = [_seconds_until_available(p, min_ready, now) for p in active]
    pending = [w for w in waits if w]
    status: dict[str, Any] = {
        "replicas": len(active),
        "fullyLabeledReplicas": sum(
            1
            for p in active
            if all(
                (p["metadata"].get("labels") or {}).get(k) == v for k, v in template_labels.items()
            )
        ),
        "readyReplicas": sum(1 for w in waits if w is not None),
        "availableReplicas": sum(1 for w in waits if w == 0.0),
        "terminatingReplicas": sum(1 for p in terminating if not _terminal(p)),
        "observedGeneration": int(meta.get("generation") or 1),
    }
    return ReplicaSetPlan(tuple(creates), tuple(deletes), status, min(pending) if pending else None)


def _pod(rs: Obj, name: str) -> dict[str, Any]:
    template = copy.deepcopy(dict((rs.get("spec") or {}).get("template") or {}))
    meta = dict(template.get("metadata") or {})
    rmeta = rs.get("metadata") or {}
    meta["name"] = name
    meta["namespace"] = rmeta.get("namespace", "default")
    meta["labels"] = dict(meta.get("labels") or {})
    meta["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": rmeta.get("name", ""),
            "uid": rmeta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec") or {}}


def _delete(pod: Obj, reason: str) -> DeletePod:
    meta = pod["metadata"]
    return DeletePod(meta.get("namespace", ""), meta["name"], meta.get("uid", ""), reason)
