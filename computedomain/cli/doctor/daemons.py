"""Checks on a domain's IMEX daemons: one per node the domain's workloads run on.

- a node labelled for the domain without a daemon pod (the DaemonSet has not made one);
- a daemon pod that is pending: unschedulable (the ``PodScheduled`` message), or placed but
  not started (its containers' state, its latest Warning event);
- a host ``nvidia-imex.service`` holding the IMEX session (the daemon's ``NV_ERR_IN_USE``
  event), or no network interface for the node's address;
- a full index space: the daemon's clique already has ``MAX_NODES_PER_IMEX_DOMAIN`` entries
  while this daemon has none (or the daemon said so in an event);
- other problems the daemon reported on its pod;
- a running daemon that is not Ready: what its ``check`` probe says (the kubelet's
  ``Unhealthy`` events), else its container state;
- a Ready daemon without a Ready entry.

A finding about a pod that a more specific one already explains is left out. Pure; called by
:mod:`.diagnosis`.
"""

from __future__ import annotations

from collections.abc import Mapping

from computedomain.api import names
from computedomain.cli.doctor import podstate, reasons
from computedomain.cli.doctor.domainparts import UNKNOWN_CLIQUE, DomainParts, Entry, pod_clique
from computedomain.cli.doctor.findings import Cause, Finding, Subject
from computedomain.cli.doctor.snapshot import Index, Obj, name, namespace, ref, section

READY = "Ready"
NOT_READY = "NotReady"


def _subject(pod: Obj) -> Subject:
    return Subject("Pod", name(pod), namespace(pod))


def _event_message(event: Mapping[str, object]) -> str:
    return podstate.clip(str(event.get("message") or event.get("reason") or ""))


def _missing(parts: DomainParts) -> list[Finding]:
    if parts.daemon_set is None:
        return []
    ds = parts.daemon_set
    status = section(ds, "status")
    counts = ", ".join(
        f"{label} {status.get(key, 0)}"
        for label, key in (
            ("desired", "desiredNumberScheduled"),
            ("current", "currentNumberScheduled"),
            ("ready", "numberReady"),
        )
    )
    out = []
    for node in parts.labelled_nodes:
        if parts.daemon_pod_on(node) is not None:
            continue
        message = (
            f"labelled for the domain but has no IMEX daemon pod; DaemonSet {ref(ds)}: {counts}"
        )
        remedy = (
            f"see kubectl describe daemonset -n {namespace(ds)} {name(ds)} for why no pod was "
            "created (a new label takes a moment to be seen)"
        )
        out.append(
            Finding(parts.uid, Cause.DAEMON_MISSING, Subject("Node", node), message, remedy, node)
        )
    return out


def _pending(parts: DomainParts, index: Index, pod: Obj, node: str) -> Finding:
    why = podstate.unscheduled_message(pod)
    if why:
        message = f"the IMEX daemon cannot be scheduled: {why}"
        remedy = (
            "a daemon must run on every node of the domain: free CPU and memory there, or give "
            "daemon pods a priority class (cd-controller --cd-daemon-priority-class-name), and "
            "check the node's taints"
        )
        return Finding(parts.uid, Cause.DAEMON_PENDING, _subject(pod), message, remedy, node)
    # The plugin's own words first (why it retries the daemon claim), then the kubelet's.
    event = index.latest_event("Pod", pod, (reasons.RETRYING,))
    detail = _event_message(event) if event is not None else podstate.container_problem(pod)
    if detail is None:
        event = index.latest_event("Pod", pod, (reasons.FAILED_PREPARE,))
        event = event or _latest_warning(index, pod)
        detail = _event_message(event) if event is not None else None
    message = "the IMEX daemon has not started" + (f": {detail}" if detail else "")
    plugin = next(iter(index.plugin_pods_by_node.get(node, [])), None)
    logs = f"kubectl logs -n {namespace(plugin)} {name(plugin)}" if plugin else "its logs"
    remedy = (
        f"the kubelet plugin on {node or 'the node'} prepares the daemon's claim: see {logs} "
        f"and kubectl describe pod -n {namespace(pod)} {name(pod)}"
    )
    return Finding(parts.uid, Cause.DAEMON_PENDING, _subject(pod), message, remedy, node)


def _latest_warning(index: Index, pod: Obj) -> Obj | None:
    found = None
    for event in index.events_of("Pod", pod):
        if event.get("type") == "Warning":
            found = event
    return found


def _host_problem(parts: DomainParts, index: Index, pod: Obj, node: str) -> Finding | None:
    event = index.latest_event(
        "Pod", pod, (reasons.HOST_SESSION_IN_USE,), contains=reasons.NV_ERR_IN_USE
    )
    if event is not None:
        message = _event_message(event)
        remedy = (
            f"on node {node}: systemctl disable --now nvidia-imex.service && systemctl mask "
            "nvidia-imex.service (the daemon retries by itself)"
        )
        return Finding(parts.uid, Cause.HOST_IMEX_CONFLICT, _subject(pod), message, remedy, node)
    event = index.latest_event("Pod", pod, (reasons.NO_INTERFACE,))
    if event is not None:
        message = _event_message(event)
        remedy = (
            "check the pod network (the daemon's name must resolve to its pod IP through "
            "/etc/hosts in the pod) and that nothing else rewrites the hosts file"
        )
        return Finding(parts.uid, Cause.IMEX_NO_INTERFACE, _subject(pod), message, remedy, node)
    return None


def _same_clique(parts: DomainParts, clique: str) -> list[Entry]:
    return [e for e in parts.entries if e.clique_id == clique and e.clique_id]


def _index_full(parts: DomainParts, index: Index, pod: Obj, node: str) -> Finding | None:
    clique = pod_clique(pod, index)
    taken = _same_clique(parts, clique) if clique != UNKNOWN_CLIQUE else []
    event = index.latest_event("Pod", pod, (reasons.INDEX_SPACE_FULL,))
    if len(taken) < parts.max_nodes and event is None:
        return None
    holders = sorted(e.node for e in taken)
    stale = [n for n in holders if parts.daemon_pod_on(n) is None]
    message = (
        f"clique {clique} of the domain is full: {len(taken)} entries for "
        f"{names.ENV_MAX_NODES_PER_IMEX_DOMAIN}={parts.max_nodes} indices, so the daemon on "
        f"{node} cannot register"
    )
    if event is not None:
        message += f"; the daemon says: {_event_message(event)}"
    if stale:
        message += f"; entries of nodes without a daemon pod: {', '.join(stale)}"
    remedy = (
        f"run at most {parts.max_nodes} nodes of this domain per clique, or raise "
        f"{names.ENV_MAX_NODES_PER_IMEX_DOMAIN} (cd-controller --max-nodes-per-imex-domain) "
        f"to at least {len(taken) + 1}"
    )
    return Finding(parts.uid, Cause.INDEX_SPACE_FULL, _subject(pod), message, remedy, node)


def _reported(parts: DomainParts, index: Index, pod: Obj, node: str) -> Finding | None:
    event = index.latest_event("Pod", pod, reasons.DAEMON_PROBLEMS)
    if event is None:
        return None
    message = f"the IMEX daemon reports {event.get('reason')}: {_event_message(event)}"
    remedy = f"see kubectl logs -n {namespace(pod)} {name(pod)}"
    return Finding(parts.uid, Cause.DAEMON_PROBLEM, _subject(pod), message, remedy, node)


def _not_ready(parts: DomainParts, index: Index, pod: Obj, node: str) -> Finding:
    probe = index.latest_event("Pod", pod, (reasons.UNHEALTHY,))
    says = _event_message(probe) if probe is not None else None
    detail = says or podstate.container_problem(pod) or podstate.not_ready_message(pod)
    message = "the IMEX daemon runs but is not Ready" + (f": {detail}" if detail else "")
    remedy = (
        "its readiness check asks the local nvidia-imex (nvidia-imex-ctl -q) whether it is "
        f"READY; see kubectl logs -n {namespace(pod)} {name(pod)} for why nvidia-imex is not "
        "up, e.g. peers it cannot reach"
    )
    return Finding(parts.uid, Cause.DAEMON_NOT_READY, _subject(pod), message, remedy, node)


def _unregistered(parts: DomainParts, pod: Obj, node: str, entry: Entry | None) -> Finding:
    if entry is None:
        state = "has no entry in the domain's cliques or status"
    else:
        state = f"has entry {entry.status} in {entry.source}"
    message = f"the IMEX daemon is Ready but {state}"
    remedy = (
        f"the daemon updates its entry by itself; see kubectl logs -n {namespace(pod)} "
        f"{name(pod)} (can it write {names.CLIQUE_PLURAL}?)"
    )
    return Finding(parts.uid, Cause.DAEMON_NOT_REGISTERED, _subject(pod), message, remedy, node)


def _daemon_pod(parts: DomainParts, index: Index, pod: Obj) -> Finding | None:
    node = podstate.target_node(pod)
    if podstate.phase(pod) == "Pending":
        return _pending(parts, index, pod, node)
    entry = parts.entry_of(node)
    healthy = podstate.ready(pod) and entry is not None and entry.status != NOT_READY
    if healthy or podstate.terminating(pod):
        return None
    specific = _host_problem(parts, index, pod, node)
    if specific is None and entry is None:
        specific = _index_full(parts, index, pod, node)
    specific = specific or _reported(parts, index, pod, node)
    if specific is not None:
        return specific
    if not podstate.ready(pod):
        return _not_ready(parts, index, pod, node)
    return _unregistered(parts, pod, node, entry)


def check(parts: DomainParts, index: Index) -> list[Finding]:
    """Findings about the domain's daemons, one at most per daemon pod. Pure."""
    out = _missing(parts)
    for pod in sorted(parts.daemon_pods, key=ref):
        finding = _daemon_pod(parts, index, pod)
        if finding is not None:
            out.append(finding)
    return out
