"""Builders of the JSON objects controller tests feed in: domains, pods, cliques, owned objects.

Shared by the unit, property and integration tests of the controller. Each builder returns the
wire form the API server would hold, with only the fields the test names set.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

from computedomain.api import names
from computedomain.controller import rendering
from computedomain.controller.config import DaemonSettings
from computedomain.controller.snapshot import Mode, Snapshot

DRIVER_NS = "driver"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SETTINGS = DaemonSettings(namespace=DRIVER_NS, image="registry.example/cd:1", log_verbosity=4)
CLIQUE_ID = "8ef8e7a4-5d8f-4d63-9b8f-1b7e4ac8e6f1.1"
_rv = itertools.count(100)


def domain(
    name: str = "cd1",
    namespace: str = "user",
    uid: str = "uid-1",
    *,
    num_nodes: int | None = None,
    template: str = "channel-tmpl",
    allocation_mode: str | None = "Single",
    finalizers: tuple[str, ...] = (),
    deleting: bool = False,
    status: dict[str, Any] | None = None,
    generation: int = 1,
) -> dict[str, Any]:
    channel: dict[str, Any] = {"resourceClaimTemplate": {"name": template}}
    if allocation_mode is not None:
        channel["allocationMode"] = allocation_mode
    spec: dict[str, Any] = {"channel": channel}
    if num_nodes is not None:
        spec["numNodes"] = num_nodes
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "resourceVersion": str(next(_rv)),
        "generation": generation,
    }
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if deleting:
        meta["deletionTimestamp"] = "2026-01-02T03:00:00Z"
    obj: dict[str, Any] = {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": meta,
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def node_entry(
    name: str,
    ip: str = "10.0.0.1",
    *,
    clique: str = CLIQUE_ID,
    index: int = 0,
    status: str | None = "Ready",
    pod_uid: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "ipAddress": ip, "cliqueID": clique, "index": index}
    if status is not None:
        entry["status"] = status
    if pod_uid is not None:
        entry["podUID"] = pod_uid
    return entry


def pod(
    node: str,
    uid: str = "uid-1",
    *,
    clique: str | None = CLIQUE_ID,
    ip: str = "10.0.0.1",
    ready: bool = True,
    phase: str = "Running",
    namespace: str = DRIVER_NS,
    name: str | None = None,
    bound: bool = True,
    conditions: list[dict[str, Any]] | None = None,
    container_statuses: list[dict[str, Any]] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    labels = {names.COMPUTE_DOMAIN_LABEL: uid}
    if clique is not None:
        labels[names.CLIQUE_LABEL] = clique
    spec: dict[str, Any] = {"containers": [{"name": "d", "image": "x"}]}
    if bound:
        spec["nodeName"] = node
    else:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            }
        }
    status: dict[str, Any] = {"phase": phase}
    if ip:
        status["podIP"] = ip
    if conditions is None:
        conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    status["conditions"] = conditions
    if container_statuses is not None:
        status["containerStatuses"] = container_statuses
    meta: dict[str, Any] = {
        "name": name or f"daemon-{uid}-{node}",
        "namespace": namespace,
        "uid": f"pod-{uid}-{node}",
        "labels": labels,
        "resourceVersion": str(next(_rv)),
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-02T03:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def clique(
    uid: str = "uid-1",
    clique_id: str = CLIQUE_ID,
    daemons: list[dict[str, Any]] | None = None,
    namespace: str = DRIVER_NS,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.CLIQUE_KIND,
        "metadata": {
            "name": names.clique_object_name(uid, clique_id),
            "namespace": namespace,
            "uid": f"clique-{uid}-{clique_id}",
            "resourceVersion": str(next(_rv)),
            "labels": {names.COMPUTE_DOMAIN_LABEL: uid, names.CLIQUE_LABEL: clique_id},
        },
    }
    if daemons:
        obj["daemons"] = daemons
    return obj


def daemon(
    node: str, ip: str = "10.0.0.1", *, index: int = 0, status: str | None = "Ready"
) -> dict[str, Any]:
    entry: dict[str, Any] = {"nodeName": node, "ipAddress": ip, "cliqueID": CLIQUE_ID}
    entry["index"] = index
    if status is not None:
        entry["status"] = status
    return entry


def _as_stored(body: dict[str, Any], *, deleting: bool, finalizers: list[str] | None) -> dict:
    obj = {**body, "metadata": dict(body["metadata"])}
    name = obj["metadata"]["name"]
    obj["metadata"]["uid"] = f"obj-{name}-{obj['kind']}"
    obj["metadata"]["resourceVersion"] = str(next(_rv))
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-02T03:00:00Z"
    if finalizers is not None:
        obj["metadata"]["finalizers"] = finalizers
    return obj


def owned_objects(
    cd: dict[str, Any], settings: DaemonSettings = SETTINGS
) -> dict[str, dict[str, Any]]:
    """The three objects the controller would create for ``cd``, as stored."""
    from computedomain.api import convert

    model = convert.compute_domain(cd)
    return {
        "daemon_template": _as_stored(
            rendering.daemon_claim_template(model, settings), deleting=False, finalizers=None
        ),
        "daemon_set": _as_stored(
            rendering.daemon_set(model, settings), deleting=False, finalizers=None
        ),
        "workload_template": _as_stored(
            rendering.workload_claim_template(model), deleting=False, finalizers=None
        ),
    }


def stored(
    body: dict[str, Any], *, deleting: bool = False, finalizers: list[str] | None = None
) -> dict[str, Any]:
    return _as_stored(body, deleting=deleting, finalizers=finalizers)


def snapshot(cd: dict[str, Any] | None, **kwargs: Any) -> Snapshot:
    kwargs.setdefault("uid", cd["metadata"]["uid"] if cd else "uid-1")
    kwargs.setdefault("now", NOW)
    kwargs.setdefault("settings", SETTINGS)
    kwargs.setdefault("mode", Mode.CLIQUES)
    return Snapshot(domain=cd, **kwargs)


def full_snapshot(cd: dict[str, Any], **kwargs: Any) -> Snapshot:
    """A snapshot of a domain whose three objects exist."""
    objs = owned_objects(cd)
    kwargs.setdefault("daemon_sets", (objs["daemon_set"],))
    kwargs.setdefault("daemon_templates", (objs["daemon_template"],))
    kwargs.setdefault("workload_templates", (objs["workload_template"],))
    return snapshot(cd, **kwargs)
