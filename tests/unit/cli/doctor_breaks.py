"""The breaks of the doctor's table: each function takes a healthy world
(:func:`~tests.unit.cli.doctor_objects.healthy`) and breaks one thing in it, as the problem
would show in the cluster. Used by the unit table (``test_doctor_diagnosis.py``), the
Hypothesis properties and the integration tests against the embedded API server.
"""

from __future__ import annotations

from typing import Any

from computedomain.api import names
from tests.unit.cli import doctor_objects as o


def pending_worker(w: o.World, node: str = "node-b") -> dict[str, Any]:
    pod = w.find("workload_pods", "worker-1")
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    pod["spec"]["nodeName"] = node
    return pod


def unscheduled_worker(w: o.World, *, with_claim: bool = True) -> None:
    pod = o.workload_pod("worker-2", node=None, phase="Pending")
    pod["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/2 nodes are available: 2 cannot allocate all claims.",
        }
    ]
    if with_claim:
        pod["status"]["resourceClaimStatuses"] = [
            {"name": "imex", "resourceClaimName": "worker-2-imex"}
        ]
        w.claims.append(o.claim("worker-2-imex"))
    w.workload_pods.append(pod)


def claim_not_allocated(w: o.World) -> None:
    unscheduled_worker(w)


def claim_not_created(w: o.World) -> None:
    unscheduled_worker(w, with_claim=False)


def no_plugin_anywhere(w: o.World) -> None:
    unscheduled_worker(w)
    w.slices.clear()
    w.plugin_pods.clear()


def plugin_crashing(w: o.World) -> None:
    pending_worker(w)
    w.slices[:] = [s for s in w.slices if s["spec"]["nodeName"] != "node-b"]
    plugin = w.find("plugin_pods", "node-b")
    plugin["status"]["conditions"][-1]["status"] = "False"
    plugin["status"]["containerStatuses"] = [
        {
            "name": "kubelet-plugin",
            "ready": False,
            "restartCount": 5,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
            "lastState": {
                "terminated": {"exitCode": 1, "reason": "Error", "message": "Error: no NVML"}
            },
        }
    ]


def plugin_absent(w: o.World) -> None:
    pending_worker(w)
    w.slices[:] = [s for s in w.slices if s["spec"]["nodeName"] != "node-b"]
    w.plugin_pods[:] = [p for p in w.plugin_pods if p["spec"]["nodeName"] != "node-b"]


def plugin_not_ready(w: o.World) -> None:
    pending_worker(w)
    plugin = w.find("plugin_pods", "node-b")
    plugin["status"]["conditions"][-1]["status"] = "False"


def plugin_terminating(w: o.World) -> None:
    pending_worker(w)
    w.find("plugin_pods", "node-b")["metadata"]["deletionTimestamp"] = o.T0


def plugin_gone(w: o.World) -> None:
    pending_worker(w)
    w.plugin_pods[:] = [p for p in w.plugin_pods if p["spec"]["nodeName"] != "node-b"]


def kubelet_says_unregistered(w: o.World) -> None:
    pod = pending_worker(w)
    w.events.append(
        o.event(
            pod,
            "FailedPrepareDynamicResources",
            "Failed to prepare dynamic resources: DRA driver compute-domain.nvidia.com is "
            "not registered",
        )
    )


def other_domain(w: o.World) -> None:
    pending_worker(w)
    other = o.domain("other", uid=o.OTHER_UID)
    w.all_domains.append(other)
    w.find("nodes", "node-b")["metadata"]["labels"][names.COMPUTE_DOMAIN_LABEL] = o.OTHER_UID


def gone_domain(w: o.World) -> None:
    pending_worker(w)
    w.find("nodes", "node-b")["metadata"]["labels"][names.COMPUTE_DOMAIN_LABEL] = o.OTHER_UID


def daemon_unschedulable(w: o.World) -> None:
    pending_worker(w)
    w.daemon_pods[1] = o.daemon_pod("node-b", phase="Unscheduled")
    w.daemon_pods[1]["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match "
            "Pod's node affinity/selector.",
        }
    ]
    w.cliques[0]["daemons"] = [o.entry("node-a", 0)]


def daemon_not_started(w: o.World) -> None:
    pending_worker(w)
    pod = o.daemon_pod("node-b", phase="Pending")
    pod["status"]["containerStatuses"] = [
        {
            "name": names.DAEMON_CONTAINER,
            "state": {
                "waiting": {
                    "reason": "ContainerCreating",
                    "message": "NodePrepareResources failed for claim x: error preparing ...",
                }
            },
        }
    ]
    w.daemon_pods[1] = pod
    w.events.append(
        o.event(pod, "FailedPrepareDynamicResources", "NodePrepareResources failed for claim x")
    )
    w.events.append(
        o.event(pod, "PrepareRetrying", "fabric-imex-mgmt device: cannot read /driver-root/x")
    )
    w.cliques[0]["daemons"] = [o.entry("node-a", 0)]


def daemon_not_started_quietly(w: o.World) -> None:
    pending_worker(w)
    pod = o.daemon_pod("node-b", phase="Pending")
    w.daemon_pods[1] = pod
    w.events.append(o.event(pod, "FailedMount", "MountVolume.SetUp failed for volume x"))
    w.cliques[0]["daemons"] = [o.entry("node-a", 0)]


def third_node(w: o.World, *, max_nodes: int) -> dict[str, Any]:
    w.daemon_sets[0] = o.daemon_set(max_nodes=max_nodes)
    w.nodes.append(o.node("node-c", domain_uid=o.UID))
    w.slices.append(o.resource_slice("node-c"))
    w.plugin_pods.append(o.plugin_pod("node-c"))
    pod = o.daemon_pod("node-c", ready=False)
    w.daemon_pods.append(pod)
    worker = o.workload_pod("worker-2", node="node-c", phase="Pending", claim_name="worker-2-imex")
    w.workload_pods.append(worker)
    w.claims.append(o.claim("worker-2-imex", node="node-c"))
    return pod


def index_space_full(w: o.World) -> None:
    third_node(w, max_nodes=2)


def index_space_full_event(w: o.World) -> None:
    pod = third_node(w, max_nodes=18)
    w.events.append(
        o.event(pod, "IMEXIndexSpaceFull", "no available indices within clique " + o.CLIQUE)
    )


def unready_daemon(w: o.World, node: str = "node-b") -> dict[str, Any]:
    pending_worker(w, node)
    pod = w.find("daemon_pods", node)
    pod["status"]["conditions"][-1]["status"] = "False"
    for entry in w.cliques[0]["daemons"]:
        if entry["nodeName"] == node:
            entry["status"] = "NotReady"
    return pod


def daemon_not_ready(w: o.World) -> None:
    pod = unready_daemon(w)
    w.events.append(
        o.event(
            pod,
            "Unhealthy",
            "Readiness probe failed: Error: IMEX daemon not ready: CONNECTING",
        )
    )


def daemon_crash_looping(w: o.World) -> None:
    pod = unready_daemon(w)
    pod["status"]["containerStatuses"] = [
        {
            "name": names.DAEMON_CONTAINER,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
        }
    ]


def host_conflict(w: o.World) -> None:
    pod = unready_daemon(w)
    w.events.append(o.event(pod, "Unhealthy", "Readiness probe failed: not ready"))
    w.events.append(
        o.event(
            pod,
            "IMEXSessionHeldByHost",
            "nvidia-imex cannot start: the IMEX session is held by a host nvidia-imex.service "
            "(NV_ERR_IN_USE); stop and disable it on node node-b",
        )
    )


def no_interface(w: o.World) -> None:
    pod = unready_daemon(w)
    w.events.append(
        o.event(pod, "IMEXNoMatchingInterface", "nvidia-imex cannot start: no local interface")
    )


def not_processed(w: o.World) -> None:
    del w.daemon_sets[0]


def not_processed_failing(w: o.World) -> None:
    del w.daemon_sets[0]
    w.events.append(
        o.event(
            w.domains[0],
            "ReconcileFailed",
            "creating DaemonSet: forbidden",
            kind="ComputeDomain",
        )
    )


def spec_problem(w: o.World) -> None:
    w.domains[0]["status"] = {
        "status": "NotReady",
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "WorkloadTemplateConflict",
                "message": "ResourceClaimTemplate team/job-channel already exists and belongs "
                "to no ComputeDomain; delete it or choose another "
                "spec.channel.resourceClaimTemplate.name",
                "lastTransitionTime": o.T0,
            }
        ],
    }


def daemon_missing(w: o.World) -> None:
    w.nodes.append(o.node("node-c", domain_uid=o.UID))


def prepare_retrying(w: o.World) -> None:
    pod = pending_worker(w)
    w.events.append(
        o.event(pod, "PrepareRetrying", "IMEX channel 0 is held by claim team/old of domain x")
    )


def domain_not_ready(w: o.World) -> None:
    w.domains[0] = o.domain(
        ready=False, num_nodes=4, condition=o.not_ready_condition("2/4 nodes ready (numNodes 4)")
    )
    w.all_domains[0] = w.domains[0]


def daemon_unregistered(w: o.World) -> None:
    w.cliques[0]["daemons"][1]["status"] = "NotReady"


def waiting_pod(w: o.World) -> None:
    pod = pending_worker(w)
    w.events.append(
        o.event(
            pod,
            "ComputeDomainNotReady",
            "Waiting for the IMEX daemon of ComputeDomain team/job on node node-b",
        )
    )
