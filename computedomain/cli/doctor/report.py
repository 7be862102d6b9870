"""The doctor's answer: one report per domain, as readable text or as JSON for tools.

A :class:`DomainReport` holds the domain's status, its nodes (entry and daemon pod of each, or
the host's daemon in host-managed mode) and its findings; it is OK when the domain is Ready and
nothing was found. :func:`render_text` prints, per domain, a status line, the nodes, then one
line per problem naming the object it concerns and what to do; OK domains get one line.
:func:`render_json` gives the same content as one JSON document. Pure; called by :mod:`.command`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import attrs

from computedomain.cli.doctor import hostmanaged, podstate
from computedomain.cli.doctor.domainparts import DomainParts
from computedomain.cli.doctor.findings import Finding
from computedomain.cli.doctor.snapshot import items, name, namespace, section

# A node's daemon in host-managed mode: the host's nvidia-imex, no pod of ours.
HOST: Final = "host"


@attrs.frozen
class NodeState:
    name: str
    clique_id: str | None  # None: no entry
    index: int | None
    status: str  # the entry's status, "" when it has none
    daemon: str  # the daemon pod's state, e.g. "Running, Ready" or "no pod"; or HOST

    def __str__(self) -> str:
        if self.daemon == HOST:
            return f"{self.name} (IMEX daemon on the host)"
        if self.clique_id is None:
            entry = "no entry"
        else:
            clique = self.clique_id or "none"
            entry = f"clique {clique}, index {self.index}, {self.status or 'Ready'}"
        return f"{self.name} ({entry}; daemon {self.daemon})"


@attrs.frozen
class DomainReport:
    namespace: str
    name: str
    uid: str
    status: str  # status.status, "Unknown" when absent
    ready: bool
    condition: dict[str, Any] | None
    nodes: tuple[NodeState, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return self.ready and not self.findings


def _nodes(parts: DomainParts) -> tuple[NodeState, ...]:
    nodes = {e.node for e in parts.entries}
    nodes.update(parts.labelled_nodes)
    nodes.update(podstate.node_of(p) for p in parts.daemon_pods)
    nodes.update(podstate.node_of(p) for p, _claims in parts.workload_pods)
    nodes.discard("")
    host_managed = hostmanaged.is_host_managed(parts)
    out = []
    for node in sorted(nodes):
        entry = parts.entry_of(node)
        daemon = HOST if host_managed else podstate.brief(parts.daemon_pod_on(node))
        out.append(
            NodeState(
                node,
                entry.clique_id if entry else None,
                entry.index if entry else None,
                entry.status if entry else "",
                daemon,
            )
        )
    return tuple(out)


def build(examined: Sequence[tuple[DomainParts, Sequence[Finding]]]) -> list[DomainReport]:
    """Reports from :func:`~.diagnosis.examine`'s result. Pure."""
    out = []
    for parts, findings in examined:
        status = section(parts.domain, "status")
        condition = next(
            (dict(c) for c in items(status.get("conditions")) if c.get("type") == "Ready"), None
        )
        out.append(
            DomainReport(
                namespace=namespace(parts.domain),
                name=name(parts.domain),
                uid=parts.uid,
                status=str(status.get("status") or "Unknown"),
                ready=parts.ready,
                condition=condition,
                nodes=_nodes(parts),
                findings=tuple(findings),
            )
        )
    return out


def _finding_line(finding: Finding) -> str:
    where = str(finding.subject)
    if finding.node and finding.subject.kind != "Node":
        where += f" on node {finding.node}"
    return f"  [{finding.cause}] {where}: {finding.message.rstrip('.')}. Fix: {finding.remedy}"


def render_text(reports: Sequence[DomainReport]) -> str:
    """The human report. Pure."""
    if not reports:
        return "No ComputeDomains found.\n"
    lines = []
    for report in reports:
        head = f"ComputeDomain {report.namespace}/{report.name}"
        nodes = ", ".join(n.name for n in report.nodes)
        if report.ok:
            count = f"{len(report.nodes)} node{'s' if len(report.nodes) != 1 else ''}"
            lines.append(f"{head}: OK (Ready, {count}{': ' + nodes if nodes else ''})")
            continue
        problems = len(report.findings)
        lines.append(f"{head}: {report.status}, {problems} problem{'s' if problems != 1 else ''}")
        if report.condition and report.condition.get("message"):
            lines.append(f"  condition Ready={report.condition.get('status')}: "
                         f"{podstate.clip(str(report.condition['message']))}")  # fmt: skip
        if report.nodes:
            lines.append("  nodes: " + "; ".join(str(n) for n in report.nodes))
        else:
            lines.append("  nodes: none yet")
        lines.extend(_finding_line(f) for f in report.findings)
    good = sum(1 for r in reports if r.ok)
    lines.append(f"{good}/{len(reports)} ComputeDomains OK")
    return "\n".join(lines) + "\n"


def _finding_json(finding: Finding) -> dict[str, Any]:
    return {
        "cause": str(finding.cause),
        "kind": finding.subject.kind,
        "namespace": finding.subject.namespace,
        "name": finding.subject.name,
        "node": finding.node,
        "message": finding.message,
        "remedy": finding.remedy,
    }


def to_json(reports: Sequence[DomainReport]) -> dict[str, Any]:
    """The JSON document: ``{"ok": bool, "domains": [...]}``. Pure."""
    return {
        "ok": all(r.ok for r in reports),
        "domains": [
            {
                "namespace": r.namespace,
                "name": r.name,
                "uid": r.uid,
                "status": r.status,
                "ready": r.ready,
                "ok": r.ok,
                "condition": r.condition,
                "nodes": [
                    {
                        "name": n.name,
                        "cliqueID": n.clique_id,
                        "index": n.index,
                        "status": n.status or None,
                        "daemon": n.daemon,
                    }
                    for n in r.nodes
                ],
                "findings": [_finding_json(f) for f in r.findings],
            }
            for r in reports
        ],
    }


def render_json(reports: Sequence[DomainReport]) -> str:
    return json.dumps(to_json(reports), indent=2, sort_keys=False) + "\n"
