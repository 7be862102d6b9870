"""``diagnose(snapshot) -> list[Finding]``: every reason each examined domain is not Ready.

Per domain (in ``namespace/name`` order): whether the controller has rendered its objects,
then the workload checks (:mod:`.workloads`), then the daemon checks (:mod:`.daemons`). Two
fallbacks keep the doctor from ever answering "NotReady" without a reason: a workload pod
still waiting on a node that no finding concerns gets the plugin's latest wait message (or its
container state), and a domain that is not Ready with no finding at all gets its ``Ready``
condition's message. Duplicates (one node found through two pods) are dropped. Pure and
deterministic: the same snapshot gives the same list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from computedomain.api import names
from computedomain.cli.doctor import daemons, hostmanaged, podstate, reasons, workloads
from computedomain.cli.doctor.domainparts import DomainParts, parts_of
from computedomain.cli.doctor.findings import Cause, Finding, Subject
from computedomain.cli.doctor.snapshot import Index, Snapshot, items, name, namespace, ref, section


def _ready_condition(parts: DomainParts) -> Mapping[str, Any] | None:
    status = section(parts.domain, "status")
    return next((c for c in items(status.get("conditions")) if c.get("type") == "Ready"), None)


def _domain_subject(parts: DomainParts) -> Subject:
    return Subject("ComputeDomain", name(parts.domain), namespace(parts.domain))


def _spec_problem(parts: DomainParts) -> Finding | None:
    cond = _ready_condition(parts)
    if (
        cond is None
        or cond.get("status") != "False"
        or cond.get("reason") not in (reasons.SPEC_PROBLEMS)
    ):
        return None
    message = podstate.clip(str(cond.get("message") or cond.get("reason")))
    remedy = (
        "fix it and re-create the ComputeDomain (its spec cannot change): the controller "
        "does not retry until then"
    )
    return Finding(parts.uid, Cause.SPEC_PROBLEM, _domain_subject(parts), message, remedy)


def _not_processed(parts: DomainParts, index: Index) -> Finding | None:
    if parts.daemon_set is not None:
        return None
    message = (
        f"no IMEX daemon DaemonSet ({names.daemon_object_name(parts.uid)}): the controller "
        "has not set the domain up"
    )
    event = index.latest_event("ComputeDomain", parts.domain, (reasons.RECONCILE_FAILED,))
    if event is not None:
        message += f"; it reports: {podstate.clip(str(event.get('message') or ''))}"
    remedy = "check that cd-controller runs and see its logs (it reports errors per domain)"
    return Finding(parts.uid, Cause.NOT_PROCESSED, _domain_subject(parts), message, remedy)


def _waiting_pods(parts: DomainParts, index: Index, covered: set[str]) -> list[Finding]:
    out = []
    for pod, _claims in parts.workload_pods:
        node = podstate.node_of(pod)
        if podstate.phase(pod) != "Pending" or not node or node in covered:
            continue
        event = index.latest_event("Pod", pod, (reasons.WAITING,))
        detail = (
            podstate.clip(str(event.get("message") or ""))
            if event is not None
            else podstate.container_problem(pod) or "not started yet"
        )
        message = f"waiting: {detail}"
        remedy = f"see kubectl describe pod -n {namespace(pod)} {name(pod)}"
        subject = Subject("Pod", name(pod), namespace(pod))
        out.append(Finding(parts.uid, Cause.NOT_READY, subject, message, remedy, node))
    return out


def _domain_not_ready(parts: DomainParts) -> Finding:
    status = section(parts.domain, "status")
    ready = _ready_condition(parts)
    if ready is not None and ready.get("message"):
        why = podstate.clip(f"{ready.get('reason') or 'NotReady'}: {ready.get('message')}")
    elif status.get("status"):
        why = f"status is {status.get('status')}"
    else:
        why = "it has no status yet (the controller has not reported on it)"
    message = f"not Ready: {why}"
    remedy = (
        f"see kubectl describe computedomain -n {namespace(parts.domain)} "
        f"{name(parts.domain)}; a domain with numNodes set waits until that many daemons "
        "have joined"
    )
    return Finding(parts.uid, Cause.NOT_READY, _domain_subject(parts), message, remedy)


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[Cause, Subject]] = set()
    out = []
    for finding in findings:
        key = (finding.cause, finding.subject)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return out


def diagnose_domain(parts: DomainParts, index: Index) -> list[Finding]:
    """The findings of one domain. Pure."""
    host_managed = hostmanaged.is_host_managed(parts)
    checks = (_spec_problem(parts), None if host_managed else _not_processed(parts, index))
    found = [f for f in checks if f is not None]
    found.extend(workloads.check(parts, index))
    if host_managed:
        found.extend(hostmanaged.check(parts))
    else:
        found.extend(daemons.check(parts, index))
    covered = {f.node for f in found if f.node}
    found.extend(_waiting_pods(parts, index, covered))
    if not found and not parts.ready:
        found.append(_domain_not_ready(parts))
    return _unique(found)


def examine(snapshot: Snapshot) -> list[tuple[DomainParts, list[Finding]]]:
    """Each examined domain with its findings, in ``namespace/name`` order. Pure."""
    index = Index(snapshot)
    out = []
    for domain in sorted(snapshot.domains, key=ref):
        parts = parts_of(domain, index)
        out.append((parts, diagnose_domain(parts, index)))
    return out


def diagnose(snapshot: Snapshot) -> list[Finding]:
    """Every finding of every examined domain. Pure; never raises on malformed objects."""
    return [finding for _parts, findings in examine(snapshot) for finding in findings]
