"""Checks on a domain's workload pods: their claims, the nodes they landed on, the plugin there.

For each workload pod that is not running yet:

- not placed: is its channel claim allocated? If not, what the scheduler said
  (``PodScheduled=False``), and whether any node publishes the driver's devices at all;
- placed on a node: does that node carry another domain's label (one domain per node), does
  the node have a ResourceSlice of the driver (the kubelet plugin registered) and is the
  plugin pod there Ready, and has the plugin reported a retried prepare on the pod
  (``PrepareRetrying``, :mod:`computedomain.kubeletplugin.waitevents`).

Waiting for the node's IMEX daemon is normal and explained by :mod:`.daemons`. Pure; called by
:mod:`.diagnosis`.
"""

from __future__ import annotations

from collections.abc import Sequence

from computedomain.api import names
from computedomain.cli.doctor import podstate, reasons
from computedomain.cli.doctor.domainparts import DomainParts, PodClaim, channel_domain
from computedomain.cli.doctor.findings import Cause, Finding, Subject
from computedomain.cli.doctor.snapshot import Index, Obj, labels, name, namespace, ref, section


def _pod_subject(pod: Obj) -> Subject:
    return Subject("Pod", name(pod), namespace(pod))


def _domain_claims(parts: DomainParts, claims: Sequence[PodClaim]) -> list[PodClaim]:
    return [
        pc
        for pc in claims
        if (pc.claim is not None and channel_domain(pc.claim) == parts.uid)
        or (pc.claim is None and pc.template and pc.template == parts.template)
    ]


def _scheduler_says(pod: Obj, index: Index) -> str:
    why = podstate.unscheduled_message(pod)
    if why:
        return why
    event = index.latest_event("Pod", pod, (reasons.FAILED_SCHEDULING,))
    if event is not None:
        return podstate.clip(str(event.get("message") or reasons.FAILED_SCHEDULING))
    return "the scheduler has not reported on it yet"


def _allocation_remedy(index: Index) -> str:
    if not index.slices_by_node:
        return (
            f"no node publishes {names.DRIVER_NAME} devices: the kubelet plugin is not running "
            "on any node; install it (kubectl apply -k deployments/base) and check its pods"
        )
    return (
        f"each node offers one {names.channel_device_name(0)}: at most one claim per node may "
        "use it (pods on one node should share one ResourceClaim); check that enough nodes "
        f"publish {names.DRIVER_NAME} devices (kubectl get resourceslices) and that the pod's "
        "node selector and tolerations allow them"
    )


def _unallocated(
    parts: DomainParts, index: Index, pod: Obj, claims: list[PodClaim]
) -> list[Finding]:
    out = []
    for pc in claims:
        if pc.claim is None:
            subject = Subject("Pod", name(pod), namespace(pod))
            what = (
                f"its claim {pc.pod_claim!r} (template {pc.template}) does not exist yet; the "
                f"scheduler says: {_scheduler_says(pod, index)}"
            )
        elif section(section(pc.claim, "status"), "allocation"):
            continue
        else:
            subject = Subject("ResourceClaim", pc.claim_name, namespace(pod))
            what = (
                f"not allocated, so pod {name(pod)} waits; the scheduler says: "
                f"{_scheduler_says(pod, index)}"
            )
        out.append(
            Finding(parts.uid, Cause.CLAIM_NOT_ALLOCATED, subject, what, _allocation_remedy(index))
        )
    return out


def _plugin_pod(index: Index, node: str) -> Obj | None:
    pods = index.plugin_pods_by_node.get(node, [])
    live = [p for p in pods if not podstate.terminating(p) and not podstate.finished(p)]
    chosen = live or pods
    return chosen[0] if chosen else None


def _kubelet_says_unregistered(index: Index, pod: Obj) -> str | None:
    """The kubelet's own words when it found no registered plugin for our driver."""
    marker = f"DRA driver {names.DRIVER_NAME} is not registered"
    event = index.latest_event("Pod", pod, (reasons.FAILED_PREPARE,), contains=marker)
    if event is not None and marker in str(event.get("message") or ""):
        return marker
    problem = podstate.container_problem(pod) or ""
    return marker if marker in problem else None


def _plugin(parts: DomainParts, index: Index, pod: Obj, node: str) -> Finding | None:
    """Whether the kubelet plugin serves ``node``: a slice, a Ready plugin pod, and no
    complaint of the kubelet that the driver is not registered."""
    plugin = _plugin_pod(index, node)
    has_slice = bool(index.slices_by_node.get(node))
    kubelet = _kubelet_says_unregistered(index, pod)
    # Without any plugin pod in sight (a plugin run outside Kubernetes, or unrecognised), a
    # missing pod proves nothing; a slice and a quiet kubelet then mean it serves the node.
    pods_known = bool(index.snapshot.plugin_pods)
    serving = plugin is not None and podstate.ready(plugin) and not podstate.terminating(plugin)
    if has_slice and kubelet is None and (serving if plugin else not pods_known):
        return None
    if plugin is None:
        state = "no kubelet plugin pod runs there"
        remedy = (
            "make the plugin DaemonSet select this node: its node affinity wants a GPU label "
            "(feature.node.kubernetes.io/pci-10de.present=true or nvidia.com/gpu.present=true) "
            "and it must tolerate the node's taints"
        )
    else:
        state = f"plugin pod {ref(plugin)} is {podstate.describe(plugin)}"
        remedy = f"see kubectl describe pod -n {namespace(plugin)} {name(plugin)} and its logs"
        if serving:
            remedy = f"see kubectl logs -n {namespace(plugin)} {name(plugin)}"
    if not has_slice:
        message = f"no ResourceSlice of {names.DRIVER_NAME}: {state}"
    else:
        message = f"the kubelet plugin does not serve the node: {state}"
        message += " (a ResourceSlice is left over)" if plugin is None else ""
    if kubelet is not None:
        message += f"; the kubelet says: {kubelet}"
    subject = Subject("Node", node)
    return Finding(parts.uid, Cause.PLUGIN_NOT_REGISTERED, subject, message, remedy, node)


def _other_domain(parts: DomainParts, index: Index, pod: Obj, node: str) -> Finding | None:
    node_obj = index.node_by_name.get(node)
    holder = labels(node_obj).get(names.COMPUTE_DOMAIN_LABEL) if node_obj else None
    if not holder or holder == parts.uid:
        return None
    other = index.domain_ref(holder)
    label = f"{names.COMPUTE_DOMAIN_LABEL}={holder}"
    if other is not None:
        message = (
            f"belongs to ComputeDomain {other} ({label}); a node serves one domain at a time, "
            f"so pod {ref(pod)} waits"
        )
        remedy = (
            f"wait for the pods of {other} on {node} to finish, delete them, or move pod "
            f"{name(pod)} to another node"
        )
    else:
        message = (
            f"carries {label}, the label of a ComputeDomain that no longer exists, so pod "
            f"{ref(pod)} waits"
        )
        remedy = (
            f"remove the stale label once no pod of that domain runs there: kubectl label node "
            f"{node} {names.COMPUTE_DOMAIN_LABEL}-"
        )
    return Finding(
        parts.uid, Cause.NODE_OF_OTHER_DOMAIN, Subject("Node", node), message, remedy, node
    )


def _retrying(parts: DomainParts, index: Index, pod: Obj, node: str) -> Finding | None:
    event = index.latest_event("Pod", pod, (reasons.RETRYING,))
    if event is None:
        return None
    message = (
        f"the kubelet plugin keeps retrying its prepare: "
        f"{podstate.clip(str(event.get('message') or ''))}"
    )
    remedy = "the plugin retries by itself; if it does not pass, see its logs on that node"
    return Finding(parts.uid, Cause.PREPARE_RETRYING, _pod_subject(pod), message, remedy, node)


def check(parts: DomainParts, index: Index) -> list[Finding]:
    """Findings about the domain's workload pods that are not running yet. Pure."""
    out: list[Finding] = []
    seen_nodes: set[str] = set()
    for pod, claims in parts.workload_pods:
        if podstate.phase(pod) != "Pending":
            continue
        node = podstate.node_of(pod)
        if not node:
            out.extend(_unallocated(parts, index, pod, _domain_claims(parts, claims)))
            continue
        found = [_other_domain(parts, index, pod, node)]
        if node not in seen_nodes:
            found.append(_plugin(parts, index, pod, node))
            seen_nodes.add(node)
        found.append(_retrying(parts, index, pod, node))
        out.extend(f for f in found if f is not None)
    return out
