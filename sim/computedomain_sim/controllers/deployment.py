"""The Deployment controller's decisions, reduced to what the simulation needs: keep
``spec.replicas`` pods of the template running, and report the status.

Called by :mod:`.deployment_controller` with a snapshot from its informers. Pure. There is no
ReplicaSet layer: pods are owned by the Deployment directly (controller ownerReference) and are
named ``<deployment>-<template hash>-<suffix>`` as the real ones are. A template change replaces
all pods at once (no rolling update); the simulation's Deployments never change their template.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .daemonset import CreatePod, DeletePod

__all__ = ["DeploymentPlan", "plan", "template_hash"]

Obj = Mapping[str, Any]
TEMPLATE_HASH_LABEL = "pod-template-hash"


@attrs.frozen
class DeploymentPlan:
    """Pods to create and delete, and the status to write."""

    creates: tuple[CreatePod, ...]
    deletes: tuple[DeletePod, ...]
    status: dict[str, Any]


def template_hash(deployment: Obj) -> str:
    """A short stable hash of the pod template (the ``pod-template-hash`` label). Pure."""
    template = (deployment.get("spec") or {}).get("template") or {}
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return digest[:10]


def plan(deployment: Obj, pods: Sequence[Obj], suffixes: Sequence[str]) -> DeploymentPlan:
    """Decide creates, deletes and status. ``pods``: the pods it controls; ``suffixes``: enough
    random name suffixes for the pods to create. Pure."""
    meta = deployment.get("metadata") or {}
    spec = deployment.get("spec") or {}
    wanted = int(spec.get("replicas", 1))
    current_hash = template_hash(deployment)
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    outdated = [
        p
        for p in live
        if (p["metadata"].get("labels") or {}).get(TEMPLATE_HASH_LABEL) != current_hash
    ]
    failed = [p for p in live if (p.get("status") or {}).get("phase") in ("Failed", "Succeeded")]
    keep = sorted(
        (p for p in live if p not in outdated and p not in failed),
        key=lambda p: (str(p["metadata"].get("creationTimestamp", "")), p["metadata"]["name"]),
    )
    deletes = [_delete(p, "the pod template changed") for p in outdated]
    deletes += [_delete(p, "the pod exited") for p in failed]
    deletes += [_delete(p, "more replicas than wanted") for p in keep[wanted:][::-1]]
    creates: list[CreatePod] = []
    if not meta.get("deletionTimestamp"):
        missing = max(wanted - len(keep), 0)
        base = f"{meta.get('name', '')}-{current_hash}-"
        creates = [
            CreatePod("", _pod(deployment, base + suffixes[i], current_hash))
            for i in range(missing)
        ]
    ready = sum(1 for p in keep[:wanted] if _ready(p))
    status: dict[str, Any] = {
        "observedGeneration": int(meta.get("generation") or 1),
        "replicas": len(live),
        "updatedReplicas": len(keep),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "unavailableReplicas": max(wanted - ready, 0),
        "conditions": [
            {
                "type": "Available",
                "status": "True" if ready >= wanted else "False",
                "reason": "MinimumReplicasAvailable"
                if ready >= wanted
                else "MinimumReplicasUnavailable",
                "message": "Deployment has minimum availability."
                if ready >= wanted
                else "Deployment does not have minimum availability.",
            }
        ],
    }
    return DeploymentPlan(tuple(creates), tuple(deletes), status)


def _pod(deployment: Obj, name: str, hash_: str) -> dict[str, Any]:
    template = copy.deepcopy(dict((deployment.get("spec") or {}).get("template") or {}))
    meta = dict(template.get("metadata") or {})
    dmeta = deployment.get("metadata") or {}
    meta["name"] = name
    meta["namespace"] = dmeta.get("namespace", "default")
    meta["labels"] = {**(meta.get("labels") or {}), TEMPLATE_HASH_LABEL: hash_}
    meta["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": dmeta.get("name", ""),
            "uid": dmeta.get("uid", ""),
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
