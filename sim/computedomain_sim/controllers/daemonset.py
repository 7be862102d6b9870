"""The DaemonSet controller's decisions: which pods to create and delete, and the status.

Called by :mod:`.daemonset_controller` with a snapshot from its informers; it applies the
returned actions. Pure (the pod names' random suffixes come from the caller).

Behaviour, as the real controller: one pod per node the pod template fits (node selector,
required node affinity, taints and tolerations, see
:func:`computedomain_sim.scheduler.placement.fit_reason`); a node that no longer fits loses its
pod (only NoExecute taints evict a running pod); a failed pod is deleted and replaced; surplus
pods on a node are deleted, oldest kept; a node with a terminating pod gets no new pod until the
old one is gone; a DaemonSet being deleted creates nothing. Pods are bound to their node through
required node affinity ``matchFields metadata.name In [node]`` (the scheduler binds them), carry
a controller ownerReference and the DaemonSet's default tolerations.

Rolling updates: every pod carries the hash of the template it was made from
(``controller-revision-hash``). With ``updateStrategy`` RollingUpdate (the default), a pod of an
older template is deleted (and then replaced) at once when it is not ready, and otherwise while
fewer than ``maxUnavailable`` nodes (default 1; a percentage of the desired nodes, rounded up)
lack a ready pod; OnDelete leaves it. A pod without the label (not made by this controller) is
left alone. ``updatedNumberScheduled`` counts the nodes running the current template.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from computedomain_sim.scheduler import placement

__all__ = [
    "REVISION_LABEL",
    "CreatePod",
    "DaemonSetPlan",
    "DeletePod",
    "affinity_node",
    "plan",
    "pod_for_node",
    "should_run",
    "template_hash",
]

Obj = Mapping[str, Any]

REVISION_LABEL = "controller-revision-hash"

# What the real DaemonSet controller adds to every daemon pod, so that node conditions do not
# evict or block it.
DEFAULT_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


@attrs.frozen
class CreatePod:
    """Create ``pod`` (a full Pod body) for ``node``."""

    node: str
    pod: dict[str, Any]


@attrs.frozen
class DeletePod:
    """Delete the pod ``namespace/name`` (with ``uid`` as precondition) and say why."""

    namespace: str
    name: str
    uid: str
    reason: str


@attrs.frozen
class DaemonSetPlan:
    """What to do, and the status to write if it differs from the current one."""

    creates: tuple[CreatePod, ...]
    deletes: tuple[DeletePod, ...]
    status: dict[str, Any]


def should_run(ds: Obj, node: Obj, *, probe: Obj | None = None) -> tuple[bool, bool]:
    """``(should_schedule, should_continue_running)`` for ``ds`` on ``node``. Pure.

    A pod may keep running where only NoSchedule taints (or unschedulable) would stop a new one.
    ``probe`` is ``ds``'s pod without a node (:func:`pod_for_node`), made here when not given:
    :func:`plan` makes it once for all nodes rather than deep-copying the template per node.
    """
    if probe is None:
        probe = pod_for_node(ds, node_name=None, name="probe")
    reason = placement.fit_reason(probe, node)
    if reason is None:
        return True, True
    if reason == placement.REASON_UNSCHEDULABLE:
        return False, True
    if reason.startswith("node(s) had untolerated taint"):
        tolerations = probe["spec"].get("tolerations") or []
        evicting = [
            t
            for t in (node.get("spec") or {}).get("taints") or []
            if t.get("effect") == "NoExecute"
        ]
        return False, placement.taint_reason(tolerations, evicting) is None
    return False, False


def plan(
    ds: Obj,
    nodes: Sequence[Obj],
    pods: Sequence[Obj],
    names: Mapping[str, str],
    *,
    probe: Obj | None = None,
) -> DaemonSetPlan:
    """Decide the creates, deletes and status of ``ds``. Pure.

    ``pods`` are the pods this DaemonSet controls (any phase, terminating included); ``names``
    maps a node name to the pod name to use if a pod is created there; ``probe`` is
    :func:`pod_for_node` of ``ds`` without a node, made here when not given.
    """
    terminating = bool((ds.get("metadata") or {}).get("deletionTimestamp"))
    by_node: dict[str, list[Obj]] = {}
    for pod in pods:
        by_node.setdefault(
            str((pod.get("spec") or {}).get("nodeName") or affinity_node(pod)), []
        ).append(pod)
    creates: list[CreatePod] = []
    deletes: list[DeletePod] = []
    desired = current = misscheduled = ready = updated = unavailable = 0
    if probe is None:
        probe = pod_for_node(ds, node_name=None, name="probe")
    revision = probe["metadata"]["labels"][REVISION_LABEL]
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
    outdated: list[Obj] = []
    for node in sorted(nodes, key=lambda n: str(n["metadata"]["name"])):
        node_name = str(node["metadata"]["name"])
        schedule, keep = should_run(ds, node, probe=probe)
        node_pods = by_node.pop(node_name, [])
        live = [p for p in node_pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
        if schedule:
            desired += 1
            current += 1 if node_pods else 0
        elif live:
            misscheduled += 1
        ready += sum(1 for p in live if _pod_ready(p))
        if keep:
            failed = [p for p in live if (p.get("status") or {}).get("phase") == "Failed"]
            deletes.extend(_delete(p, "the daemon pod failed") for p in failed)
            running = sorted(
                (p for p in live if p not in failed),
                key=lambda p: (
                    str(p["metadata"].get("creationTimestamp", "")),
                    p["metadata"]["name"],
                ),
            )
            deletes.extend(_delete(p, "more than one daemon pod on the node") for p in running[1:])
            if schedule and not node_pods and not terminating:
                creates.append(CreatePod(node_name, pod_for_node(ds, node_name, names[node_name])))
            if schedule:
                kept = running[0] if running else None
                labels = (kept or {}).get("metadata", {}).get("labels") or {}
                old = kept is not None and labels.get(REVISION_LABEL, revision) != revision
                updated += 1 if kept is not None and not old else 0
                unavailable += 0 if kept is not None and _pod_ready(kept) else 1
                if old and rolling and kept is not None:
                    if _pod_ready(kept):
                        outdated.append(kept)
                    else:
                        deletes.append(_delete(kept, "the daemon pod is outdated and not ready"))
        else:
            deletes.extend(_delete(p, "the node no longer fits the daemon") for p in live)
    for leftover in by_node.values():  # pods on nodes that no longer exist: pod GC removes them
        misscheduled += sum(1 for p in leftover if not p["metadata"].get("deletionTimestamp"))
    budget = _max_unavailable(strategy, desired) - unavailable
    deletes.extend(_delete(p, "the daemon pod is outdated") for p in outdated[: max(budget, 0)])
    status = {
        "currentNumberScheduled": current,
        "desiredNumberScheduled": desired,
        "numberMisscheduled": misscheduled,
        "numberReady": ready,
        "numberAvailable": ready,
        "numberUnavailable": max(desired - ready, 0),
        "updatedNumberScheduled": updated,
        "observedGeneration": int((ds.get("metadata") or {}).get("generation") or 1),
    }
    return DaemonSetPlan(tuple(creates), tuple(deletes), status)


def pod_for_node(ds: Obj, node_name: str | None, name: str) -> dict[str, Any]:
    """The pod the DaemonSet runs on ``node_name`` (None: without the node binding). Pure."""
    template = copy.deepcopy(dict((ds.get("spec") or {}).get("template") or {}))
    meta = dict(template.get("metadata") or {})
    ds_meta = ds.get("metadata") or {}
    spec = dict(template.get("spec") or {})
    meta["name"] = name
    meta["namespace"] = ds_meta.get("namespace", "default")
    meta["labels"] = {
        **(meta.get("labels") or {}),
        "pod-template-generation": str(ds_meta.get("generation") or 1),
        REVISION_LABEL: template_hash(template),
    }
    meta["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": ds_meta.get("name", ""),
            "uid": ds_meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    tolerations = list(spec.get("tolerations") or [])
    tolerations.extend(t for t in DEFAULT_TOLERATIONS if t not in tolerations)
    spec["tolerations"] = tolerations
    if node_name is not None:
        affinity = dict(spec.get("affinity") or {})
        node_affinity = dict(affinity.get("nodeAffinity") or {})
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
            ]
        }
        affinity["nodeAffinity"] = node_affinity
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def template_hash(template: Obj) -> str:
    """A short hash of a pod template: pods made from equal templates carry the same. Pure."""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _max_unavailable(strategy: Obj, desired: int) -> int:
    """The rolling update's ``maxUnavailable`` for ``desired`` nodes (at least 1). Pure."""
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1)
    if isinstance(value, str) and value.endswith("%"):
        value = math.ceil(desired * int(value[:-1]) / 100)
    return max(int(value), 1)


def affinity_node(pod: Obj) -> str:
    """The node a not-yet-scheduled daemon pod is meant for (its matchFields binding), or
    ``""``. Pure."""
    required = (((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return ""


def _pod_ready(pod: Obj) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _delete(pod: Obj, reason: str) -> DeletePod:
    meta = pod["metadata"]
    return DeletePod(meta.get("namespace", ""), meta["name"], meta.get("uid", ""), reason)
