"""The additive ``Ready`` condition: whether a domain works, and if not, what is missing.

Upstream's ``status.status`` says Ready or NotReady and nothing more; users asked why
(field-notes: "say why a workload waits"). The condition carries a reason and a message built
from the same cached objects as the status: how many nodes are ready, which nodes are not and
what their daemon pod reports (phase, a waiting container's reason, a False condition's message,
e.g. ``node-3: daemon pod Pending: 0/4 nodes match node selector``), and problems beyond the
nodes, such as a workload template name that belongs to someone else. A host problem a daemon
publishes on its pod (``DAEMON_PROBLEM_ANNOTATION``, e.g. ``IMEXSessionHeldByHost`` when a host
``nvidia-imex.service`` holds the IMEX session) becomes the reason and is quoted. Pure; called by
:mod:`~computedomain.controller.statusplan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from computedomain.api import names
from computedomain.api.models import ComputeDomainNode, ConditionStatus, Status
from computedomain.controller import aggregation, objects
from computedomain.controller.objects import JsonObject

MAX_DETAILS: Final = 5
MAX_DETAIL_LENGTH: Final = 200

REASON_READY: Final = "NodesReady"
REASON_NOT_READY: Final = "NodesNotReady"
REASON_WAITING: Final = "WaitingForNodes"
REASON_CONFLICT: Final = "WorkloadTemplateConflict"
REASON_INVALID: Final = "InvalidSpec"
REASON_RECREATING: Final = "RecreatingObjects"

_CONDITION_ORDER: Final = ("PodScheduled", "Initialized", "ContainersReady", "Ready")


@attrs.frozen
class Problem:
    """Something other than nodes that keeps a domain from working."""

    reason: str
    message: str


@attrs.frozen
class Readiness:
    status: ConditionStatus
    reason: str
    message: str


def clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL_LENGTH else text[: MAX_DETAIL_LENGTH - 3] + "..."


def pod_problem(pod: JsonObject) -> Problem | None:
    """The host problem the daemon published on its pod (``<Reason>: <message>`` in the
    problem annotation), if any. Pure."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(names.DAEMON_PROBLEM_ANNOTATION)
    if not isinstance(text, str) or not text.strip():
        return None
    reason, sep, message = text.partition(": ")
    if not sep or not reason.isalnum():
        return Problem(REASON_NOT_READY, text.strip())
    return Problem(reason, message.strip())


def describe_pod(pod: JsonObject) -> str:
    """``daemon pod <Phase>[: <why>]`` from a pod's status. Pure.

    The problem the daemon published (a host ``nvidia-imex.service`` holding the session,
    say), else the first waiting or terminated container's message (or reason), else the message (or
    reason) of the first False condition in scheduling order; ``terminating`` when deleted.
    """
    status = pod.get("status") or {}
    text = f"daemon pod {objects.pod_phase(pod)}"
    if objects.terminating(pod):
        text += " (terminating)"
    problem = pod_problem(pod)
    if problem is not None:
        return f"{text}: {clip(problem.message)}"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        for kind in ("waiting", "terminated"):
            detail = state.get(kind)
            if detail and (detail.get("message") or detail.get("reason")):
                return f"{text}: {clip(str(detail.get('message') or detail.get('reason')))}"
    by_type = {c.get("type"): c for c in objects.pod_conditions(pod)}
    for kind in _CONDITION_ORDER:
        cond = by_type.get(kind)
        if cond and cond.get("status") == "False" and (cond.get("message") or cond.get("reason")):
            return f"{text}: {clip(str(cond.get('message') or cond.get('reason')))}"
    return text


def _pods_by_node(pods: Sequence[JsonObject]) -> dict[str, JsonObject]:
    found: dict[str, JsonObject] = {}
    for pod in sorted(pods, key=lambda p: (objects.pod_finished(p), objects.name(p))):
        node = objects.pod_node(pod)
        if node:
            found.setdefault(node, pod)
    return found


def node_details(nodes: Sequence[ComputeDomainNode], pods: Sequence[JsonObject]) -> list[str]:
    """One line per node that is not ready, or whose daemon pod has no entry yet. Pure."""
    pods_on = _pods_by_node(pods)
    listed = {n.name for n in nodes}
    details = []
    for node in sorted(nodes, key=lambda n: n.name):
        if aggregation.node_ready(node):
            continue
        pod = pods_on.get(node.name)
        why = describe_pod(pod) if pod else "NotReady, no daemon pod"
        details.append(f"{node.name}: {why}")
    for node_name, pod in sorted(pods_on.items()):
        if node_name not in listed and not objects.pod_finished(pod):
            details.append(f"{node_name}: not registered yet, {describe_pod(pod)}")
    return details


def _first_host_problem(
    nodes: Sequence[ComputeDomainNode], pods: Sequence[JsonObject]
) -> Problem | None:
    """The problem published by the daemon pod of the first node (by name) that is not ready,
    or of a pod not registered yet."""
    ready = {n.name for n in nodes if aggregation.node_ready(n)}
    for node_name, pod in sorted(_pods_by_node(pods).items()):
        problem = pod_problem(pod)
        if node_name not in ready and problem is not None:
            return problem
    return None


def readiness(
    *,
    nodes: Sequence[ComputeDomainNode],
    num_nodes: int,
    pods: Sequence[JsonObject],
    problems: Sequence[Problem] = (),
) -> Readiness:
    """The Ready condition's status, reason and message. Pure."""
    ready = sum(1 for n in nodes if aggregation.node_ready(n))
    expected = max(num_nodes, len(nodes))
    parts = [f"{ready}/{expected} nodes ready"]
    if len(nodes) < num_nodes:
        parts[0] += f" (numNodes {num_nodes}, {num_nodes - len(nodes)} not joined)"
    details = node_details(nodes, pods)
    parts.extend(details[:MAX_DETAILS])
    if len(details) > MAX_DETAILS:
        parts.append(f"and {len(details) - MAX_DETAILS} more")
    message = "; ".join(parts)
    if problems:
        first = problems[0]
        text = "; ".join(p.message for p in problems)
        return Readiness(ConditionStatus.FALSE, first.reason, f"{text}; {message}")
    status = aggregation.global_status(nodes, num_nodes)
    if status is Status.READY:
        return Readiness(ConditionStatus.TRUE, REASON_READY, message)
    host_problem = _first_host_problem(nodes, pods)
    if host_problem is not None:
        return Readiness(ConditionStatus.FALSE, host_problem.reason, message)
    if len(nodes) < num_nodes:
        return Readiness(ConditionStatus.FALSE, REASON_WAITING, message)
    return Readiness(ConditionStatus.FALSE, REASON_NOT_READY, message)
