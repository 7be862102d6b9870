"""Builders of the API objects the doctor reads, shaped as our components write them.

Shared by the doctor's unit tables (``test_doctor_*.py``) and its integration tests, which
create the same objects on the embedded API server. :func:`healthy` is a Ready two-node domain
with one workload pod per node; each test case breaks one thing in it.
"""

from __future__ import annotations

import copy
from typing import Any

import attrs

from computedomain.api import names
from computedomain.cli.doctor.snapshot import Snapshot

Obj = dict[str, Any]

DRIVER_NS = "computedomain-system"
NS = "team"
UID = "11111111-2222-3333-4444-555555555555"
OTHER_UID = "99999999-8888-7777-6666-555555555555"
CLIQUE = "0d3c9a1e-5b7f-4e2a-9c8d-1f2e3d4c5b6a.3"
TEMPLATE = "job-channel"
T0 = "2026-01-01T00:00:00Z"


def _cond(kind: str, status: bool, reason: str = "", message: str = "") -> Obj:
    cond: Obj = {"type": kind, "status": "True" if status else "False", "lastTransitionTime": T0}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def domain(
    name: str = "job",
    *,
    ns: str = NS,
    uid: str = UID,
    ready: bool = True,
    nodes: list[Obj] | None = None,
    num_nodes: int = 0,
    condition: Obj | None = None,
    with_status: bool = True,
) -> Obj:
    obj: Obj = {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": {"name": name, "namespace": ns, "uid": uid},
        "spec": {"numNodes": num_nodes, "channel": {"resourceClaimTemplate": {"name": TEMPLATE}}},
    }
    if with_status:
        status: Obj = {"status": "Ready" if ready else "NotReady"}
        if nodes:
            status["nodes"] = nodes
        if condition is not None:
            status["conditions"] = [condition]
        obj["status"] = status
    return obj


def daemon_set(uid: str = UID, *, max_nodes: int = 18, status: Obj | None = None) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": names.daemon_object_name(uid),
            "namespace": DRIVER_NS,
            "uid": f"ds-{uid}",
            "labels": {names.COMPUTE_DOMAIN_LABEL: uid},
        },
        "spec": {
            "selector": {"matchLabels": {names.COMPUTE_DOMAIN_LABEL: uid}},
            "template": {
                "metadata": {"labels": {names.COMPUTE_DOMAIN_LABEL: uid}},
                "spec": {
                    "nodeSelector": {names.COMPUTE_DOMAIN_LABEL: uid},
                    "containers": [
                        {
                            "name": names.DAEMON_CONTAINER,
                            "image": "ghcr.io/computedomain/computedomain:0.1.0",
                            "command": ["cd-imex-daemon", "-v", "$(LOG_VERBOSITY)", "run"],
                            "env": [
                                {
                                    "name": names.ENV_MAX_NODES_PER_IMEX_DOMAIN,
                                    "value": str(max_nodes),
                                }
                            ],
                        }
                    ],
                },
            },
        },
        "status": status or {"desiredNumberScheduled": 0, "currentNumberScheduled": 0},
    }


def plugin_daemon_set() -> Obj:
    labels = {"app.kubernetes.io/name": "computedomain", "app.kubernetes.io/component": "kp"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "computedomain-kubelet-plugin", "namespace": DRIVER_NS},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "kubelet-plugin",
                            "image": "ghcr.io/computedomain/computedomain:0.1.0",
                            "command": ["cd-kubelet-plugin", "-v", "$(LOG_VERBOSITY)"],
                        }
                    ]
                },
            },
        },
    }


def _pod(
    name: str,
    ns: str,
    *,
    uid: str,
    node: str | None,
    phase: str,
    ready: bool,
    labels: Obj | None = None,
    spec: Obj | None = None,
) -> Obj:
    pod_spec: Obj = dict(spec or {})
    pod_spec.setdefault("containers", [{"name": "main", "image": "busybox"}])
    if node:
        pod_spec["nodeName"] = node
    conditions = [_cond("PodScheduled", bool(node))]
    if phase == "Running":
        conditions.append(_cond("Ready", ready))
    status: Obj = {"phase": phase, "conditions": conditions}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "labels": labels or {}},
        "spec": pod_spec,
        "status": status,
    }


def daemon_pod(
    node: str,
    *,
    uid: str = UID,
    phase: str = "Running",
    ready: bool = True,
    clique: str | None = CLIQUE,
    name: str | None = None,
) -> Obj:
    labels = {names.COMPUTE_DOMAIN_LABEL: uid}
    if clique is not None:
        labels[names.CLIQUE_LABEL] = clique
    spec: Obj = {
        "containers": [{"name": names.DAEMON_CONTAINER, "image": "x"}],
        "affinity": {
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
        },
    }
    pod_name = name or f"computedomain-daemon-{uid[:8]}-{node}"
    return _pod(
        pod_name,
        DRIVER_NS,
        uid=f"pod-{pod_name}",
        node=node if phase != "Unscheduled" else None,
        phase="Pending" if phase == "Unscheduled" else phase,
        ready=ready,
        labels=labels,
        spec=spec,
    )


def workload_pod(
    name: str,
    *,
    node: str | None,
    phase: str = "Running",
    ready: bool = True,
    ns: str = NS,
    claim_name: str | None = None,
    template: str = TEMPLATE,
) -> Obj:
    spec: Obj = {
        "resourceClaims": [{"name": "imex", "resourceClaimTemplateName": template}],
    }
    pod = _pod(name, ns, uid=f"pod-{name}", node=node, phase=phase, ready=ready, spec=spec)
    if claim_name is not None:
        pod["status"]["resourceClaimStatuses"] = [{"name": "imex", "resourceClaimName": claim_name}]
    return pod


def claim(name: str, *, uid: str = UID, node: str | None = None, ns: str = NS) -> Obj:
    obj: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "uid": f"claim-{name}"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": names.CHANNEL_REQUEST,
                        "exactly": {"deviceClassName": names.CHANNEL_DEVICE_CLASS},
                    }
                ],
                "config": [
                    {
                        "requests": [names.CHANNEL_REQUEST],
                        "opaque": {
                            "driver": names.DRIVER_NAME,
                            "parameters": {
                                "apiVersion": names.GROUP_VERSION,
                                "kind": names.CHANNEL_CONFIG_KIND,
                                "domainID": uid,
                                "allocationMode": "Single",
                            },
                        },
                    }
                ],
            }
        },
    }
    if node is not None:
        obj["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": names.CHANNEL_REQUEST,
                            "driver": names.DRIVER_NAME,
                            "pool": node,
                            "device": names.channel_device_name(0),
                        }
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            }
        }
    return obj


def entry(node: str, index: int, status: str = "Ready", clique: str = CLIQUE) -> Obj:
    return {
        "nodeName": node,
        "ipAddress": f"10.0.0.{index + 1}",
        "cliqueID": clique,
        "index": index,
        "status": status,
    }


def clique(entries: list[Obj], *, uid: str = UID, clique_id: str = CLIQUE) -> Obj:
    return {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.CLIQUE_KIND,
        "metadata": {
            "name": names.clique_object_name(uid, clique_id),
            "namespace": DRIVER_NS,
            "labels": {names.COMPUTE_DOMAIN_LABEL: uid},
        },
        "daemons": entries,
    }


def node(name: str, *, domain_uid: str | None = None) -> Obj:
    labels = {"nvidia.com/gpu.present": "true"}
    if domain_uid:
        labels[names.COMPUTE_DOMAIN_LABEL] = domain_uid
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{name}", "labels": labels},
    }


def resource_slice(node_name: str, *, clique_id: str = CLIQUE) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"00000-{names.DRIVER_NAME}-{node_name}-abcde"},
        "spec": {
            "driver": names.DRIVER_NAME,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": names.channel_device_name(0),
                    "attributes": {
                        "type": {"string": "channel"},
                        "id": {"int": 0},
                        names.ATTRIBUTE_CLIQUE_ID: {"string": clique_id},
                    },
                }
            ],
        },
    }


def plugin_pod(node_name: str, *, phase: str = "Running", ready: bool = True) -> Obj:
    labels = {"app.kubernetes.io/name": "computedomain", "app.kubernetes.io/component": "kp"}
    return _pod(
        f"computedomain-kubelet-plugin-{node_name}",
        DRIVER_NS,
        uid=f"pod-plugin-{node_name}",
        node=node_name,
        phase=phase,
        ready=ready,
        labels=labels,
        spec={"containers": [{"name": "kubelet-plugin", "image": "x"}]},
    )


def event(
    obj: Obj, reason: str, message: str, *, kind: str = "Pod", type_: str = "Warning", at: str = T0
) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta['name']}.{reason.lower()}",
            "namespace": meta.get("namespace"),
        },
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": kind,
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
        },
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 1,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "source": {"component": "test"},
    }


@attrs.define
class World:
    """A mutable bag of object lists; :meth:`snapshot` freezes it."""

    domains: list[Obj]
    all_domains: list[Obj]
    cliques: list[Obj]
    daemon_sets: list[Obj]
    daemon_pods: list[Obj]
    workload_pods: list[Obj]
    claims: list[Obj]
    slices: list[Obj]
    nodes: list[Obj]
    plugin_pods: list[Obj]
    events: list[Obj]

    def snapshot(self) -> Snapshot:
        return Snapshot(**{k: copy.deepcopy(v) for k, v in attrs.asdict(self).items()})

    def find(self, kind_list: str, name: str) -> Obj:
        for obj in getattr(self, kind_list):
            if obj["metadata"]["name"] == name or obj["metadata"]["name"].endswith(f"-{name}"):
                return obj  # type: ignore[no-any-return]
        raise KeyError(name)


NODES = ("node-a", "node-b")


def healthy() -> World:
    """A Ready domain on two nodes (one clique), one Running workload pod per node."""
    cd = domain(
        nodes=[
            {
                "name": n,
                "ipAddress": f"10.0.0.{i + 1}",
                "cliqueID": CLIQUE,
                "index": i,
                "status": "Ready",
            }
            for i, n in enumerate(NODES)
        ],
        condition=_cond("Ready", True, "NodesReady", "2/2 nodes ready"),
    )
    return World(
        domains=[cd],
        all_domains=[cd],
        cliques=[clique([entry(n, i) for i, n in enumerate(NODES)])],
        daemon_sets=[
            daemon_set(status={"desiredNumberScheduled": 2, "numberReady": 2}),
            plugin_daemon_set(),
        ],
        daemon_pods=[daemon_pod(n) for n in NODES],
        workload_pods=[
            workload_pod(f"worker-{i}", node=n, claim_name=f"worker-{i}-imex")
            for i, n in enumerate(NODES)
        ],
        claims=[claim(f"worker-{i}-imex", node=n) for i, n in enumerate(NODES)],
        slices=[resource_slice(n) for n in NODES],
        nodes=[node(n, domain_uid=UID) for n in NODES],
        plugin_pods=[plugin_pod(n) for n in NODES],
        events=[],
    )


def not_ready_condition(message: str) -> Obj:
    return _cond("Ready", False, "NodesNotReady", message)
