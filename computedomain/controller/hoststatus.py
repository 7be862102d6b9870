"""A domain's status with host-managed IMEX: ``Ready``, plus a condition that says more.

With host-managed IMEX (docs/compatibility.md#host-managed-imex-daemons) no daemon registers,
so upstream writes ``status.status: Ready`` at once and never ``status.nodes``; we keep both.
Upstream's status then says nothing about the hosts' ``nvidia-imex``, and a workload whose
host daemon is not ready waits with no word on the domain. Here the kubelet plugin of such a
node annotates the domain (:func:`~computedomain.api.names.host_imex_problem_annotation`, value
``<node>: <why>``) while a channel claim waits for its host daemon, and clears it once the daemon
answers READY; the ``Ready`` condition is False with reason ``HostIMEXDaemonNotReady`` and
quotes those annotations while any is present, else True (reason ``HostIMEXDaemonsManaged``).
Problems beyond the hosts (a workload template name taken) come first, as in driver-managed
mode. Pure; called by :mod:`~computedomain.controller.planning`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from computedomain.api import conditions, convert, names
from computedomain.api.models import ComputeDomain, ConditionStatus, Status
from computedomain.controller import readiness, statusplan
from computedomain.controller.actions import Action, Kind, Ref, WriteStatus
from computedomain.controller.readiness import Problem, Readiness
from computedomain.controller.snapshot import Snapshot

REASON_HOST_READY: Final = "HostIMEXDaemonsManaged"
REASON_HOST_NOT_READY: Final = "HostIMEXDaemonNotReady"
MAX_NODES_QUOTED: Final = readiness.MAX_DETAILS


def host_problems(domain_object: Mapping[str, Any] | None) -> list[str]:
    """The host IMEX problems the kubelet plugins published on the domain, sorted. Pure."""
    annotations = ((domain_object or {}).get("metadata") or {}).get("annotations") or {}
    if not isinstance(annotations, Mapping):
        return []
    found = [
        " ".join(str(value).split())
        for key, value in annotations.items()
        if isinstance(key, str) and key.startswith(names.HOST_IMEX_PROBLEM_PREFIX)
    ]
    return sorted(text for text in found if text)


def host_readiness(hosts: Sequence[str], problems: Sequence[Problem] = ()) -> Readiness:
    """The Ready condition from the hosts' problems and the domain's own. Pure."""
    if hosts:
        quoted = [readiness.clip(text) for text in hosts[:MAX_NODES_QUOTED]]
        if len(hosts) > MAX_NODES_QUOTED:
            quoted.append(f"and {len(hosts) - MAX_NODES_QUOTED} more")
        count = f"{len(hosts)} node{'s' if len(hosts) != 1 else ''}"
        host_text = f"host nvidia-imex daemon not ready on {count}: " + "; ".join(quoted)
    else:
        host_text = ""
    if problems:
        text = "; ".join(p.message for p in problems)
        if host_text:
            text += f"; {host_text}"
        return Readiness(ConditionStatus.FALSE, problems[0].reason, text)
    if host_text:
        return Readiness(ConditionStatus.FALSE, REASON_HOST_NOT_READY, host_text)
    return Readiness(
        ConditionStatus.TRUE,
        REASON_HOST_READY,
        "IMEX daemons are managed by the hosts (imex.mode=hostManaged); no node reports its "
        "host nvidia-imex daemon not ready",
    )


def desired_status(
    snapshot: Snapshot, domain: ComputeDomain, problems: Sequence[Problem] = ()
) -> dict[str, Any]:
    """The status the domain should have (wire form); ``nodes`` is left as it is. Pure."""
    state = host_readiness(host_problems(snapshot.domain), problems)
    raw = dict((snapshot.domain or {}).get("status") or {})
    raw["status"] = str(Status.READY)
    raw["conditions"] = statusplan.ready_conditions(snapshot, domain, state)
    return raw


def plan_status(
    snapshot: Snapshot, domain: ComputeDomain, problems: Sequence[Problem] = ()
) -> tuple[Action, ...]:
    """A WriteStatus when the global status or a condition changed, else nothing. Pure."""
    status = desired_status(snapshot, domain, problems)
    current = (snapshot.domain or {}).get("status") or {}
    old = domain.status
    new = convert.from_wire(type(old), status) if old else None
    if (
        old is not None
        and new is not None
        and current.get("status") == status["status"]
        and conditions.same_except_time(old.conditions, new.conditions)
    ):
        return ()
    meta = domain.metadata
    ref = Ref(Kind.COMPUTE_DOMAIN, meta.namespace, meta.name, meta.uid)
    return (WriteStatus(ref, status, status["status"], (snapshot.domain or {}).get("status")),)
