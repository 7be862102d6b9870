"""The Job controller's decisions: run pods of the template until ``spec.completions`` of them
succeeded, at most ``spec.parallelism`` at a time, and give up after ``spec.backoffLimit``
failures, with the status and conditions kube-controller-manager writes (``SuccessCriteriaMet``
then ``Complete``; ``FailureTarget`` then ``Failed``).

Called by :mod:`.job_controller` with a snapshot from its informers. Pure. Non-indexed
completion only; a suspended Job runs no pods.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .daemonset import CreatePod, DeletePod

__all__ = ["JobPlan", "finished", "plan"]

Obj = Mapping[str, Any]


@attrs.frozen
class JobPlan:
    """Pods to create and delete, and the status to write."""

    creates: tuple[CreatePod, ...]
    deletes: tuple[DeletePod, ...]
    status: dict[str, Any]


def finished(job: Obj) -> str:
    """``Complete`` or ``Failed`` once the Job has ended, else ""."""
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return ""


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _condition(kind: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }


def plan(job: Obj, pods: Sequence[Obj], suffixes: Sequence[str], now: str) -> JobPlan:
    """Decide creates, deletes and status. ``pods``: the pods the Job controls; ``suffixes``:
    enough random name suffixes; ``now``: the RFC 3339 time of this sync. Pure."""
    spec = job.get("spec") or {}
    status = dict(job.get("status") or {})
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    active = [p for p in live if _phase(p) not in ("Succeeded", "Failed")]
    succeeded = sum(1 for p in pods if _phase(p) == "Succeeded")
    failed = sum(1 for p in pods if _phase(p) == "Failed")
    status["succeeded"] = max(succeeded, int(status.get("succeeded") or 0))
    status["failed"] = max(failed, int(status.get("failed") or 0))
    status["active"] = len(active)
    status["ready"] = sum(1 for p in active if _ready(p))
    status["terminating"] = len(pods) - len(live)
    status.setdefault("uncountedTerminatedPods", {})
    ended = finished(job)
    if ended:
        return JobPlan((), tuple(_delete(p, f"the Job is {ended.lower()}") for p in active), status)
    completions = spec.get("completions")
    conditions = list(status.get("conditions") or [])
    deletes: list[DeletePod] = []
    creates: list[CreatePod] = []
    if status["failed"] > int(spec.get("backoffLimit", 6)):
        message = "Job has reached the specified backoff limit"
        conditions += [
            _condition("FailureTarget", "BackoffLimitExceeded", message, now),
            _condition("Failed", "BackoffLimitExceeded", message, now),
        ]
        deletes = [_delete(p, "the Job failed") for p in active]
        status["active"] = 0
    elif completions is not None and status["succeeded"] >= int(completions):
        message = "Reached expected number of succeeded pods"
        conditions += [
            _condition("SuccessCriteriaMet", "CompletionsReached", message, now),
            _condition("Complete", "CompletionsReached", message, now),
        ]
        status["completionTime"] = now
    elif not spec.get("suspend"):
        status.setdefault("startTime", now)
        wanted = int(spec.get("parallelism", 1))
        if completions is not None:
            wanted = min(wanted, int(completions) - status["succeeded"])
        missing = max(wanted - len(active), 0)
        name = str((job.get("metadata") or {}).get("name", ""))
        creates = [CreatePod("", _pod(job, f"{name}-{suffixes[i]}")) for i in range(missing)]
    if conditions:
        status["conditions"] = conditions
    return JobPlan(tuple(creates), tuple(deletes), status)


def _pod(job: Obj, name: str) -> dict[str, Any]:
    template = copy.deepcopy(dict((job.get("spec") or {}).get("template") or {}))
    meta = dict(template.get("metadata") or {})
    jmeta = job.get("metadata") or {}
    meta["name"] = name
    meta["namespace"] = jmeta.get("namespace", "default")
    meta["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": jmeta.get("name", ""),
            "uid": jmeta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec") or {}}


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _delete(pod: Obj, reason: str) -> DeletePod:
    meta = pod["metadata"]
    return DeletePod(meta.get("namespace", ""), meta["name"], meta.get("uid", ""), reason)
