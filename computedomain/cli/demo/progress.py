"""Live progress of the demo: one row per node (its rack, the domain's daemon on it, the
daemon's index and readiness, the worker on it) under a line about the domain.

Called by :mod:`.session` every half second. :func:`gather` reads the API into a
:class:`Snapshot`; :func:`rows`, :func:`missing` and :func:`render` are pure; :class:`Display`
writes the table: on a terminal it redraws it in place (ANSI cursor movement), otherwise it
prints only the lines that changed since the last call, so logs and pipes stay readable.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import attrs

from computedomain.api import names
from computedomain.kube import errors
from computedomain.kube.resources import COMPUTE_DOMAINS, NODES, PODS
from computedomain.kube.rest import Api
from computedomain.sim.cluster.cluster import DRIVER_NAMESPACE
from computedomain.sim.cluster.topology import RACK_LABEL

from .workload import Workload

__all__ = ["Display", "Snapshot", "gather", "missing", "render", "rows"]

Obj = Mapping[str, Any]


@attrs.frozen
class Snapshot:
    """What the API said at one moment."""

    nodes: tuple[Obj, ...]
    domain: Obj | None
    daemons: tuple[Obj, ...]  # the domain's daemon pods
    workers: tuple[Obj, ...]


async def gather(api: Api, workload: Workload) -> Snapshot:
    """Read nodes, the domain, its daemon pods and the workers. Raises API errors."""
    nodes, _ = await api.list_all(NODES)
    try:
        domain: Obj | None = await api.get(COMPUTE_DOMAINS, workload.domain, workload.namespace)
    except errors.NotFound:
        domain = None
    daemons: Sequence[Obj] = []
    uid = str(((domain or {}).get("metadata") or {}).get("uid", ""))
    if uid:
        selector = f"{names.COMPUTE_DOMAIN_LABEL}={uid}"
        daemons, _ = await api.list_all(PODS, DRIVER_NAMESPACE, label_selector=selector)
    selector = ",".join(f"{k}={v}" for k, v in workload.selector.items())
    workers, _ = await api.list_all(PODS, workload.namespace, label_selector=selector)
    return Snapshot(tuple(nodes), domain, tuple(daemons), tuple(workers))


def pod_ready(pod: Obj) -> bool:
    """Whether the pod's Ready condition is True. Pure."""
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _phase(pod: Obj | None) -> str:
    if pod is None:
        return "-"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    phase = str((pod.get("status") or {}).get("phase") or "Pending")
    if phase == "Running" and not pod_ready(pod):
        return "Running (not ready)"
    return phase


def _on_node(pods: Sequence[Obj]) -> dict[str, Obj]:
    return {str((p.get("spec") or {}).get("nodeName")): p for p in pods if p.get("spec")}


def rows(snapshot: Snapshot) -> list[list[str]]:
    """``NODE RACK DAEMON INDEX STATUS WORKER`` per node, sorted by node name. Pure."""
    entries = {
        str(e.get("name")): e
        for e in ((snapshot.domain or {}).get("status") or {}).get("nodes") or []
    }
    daemons, workers = _on_node(snapshot.daemons), _on_node(snapshot.workers)
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: str(n["metadata"]["name"])):
        name = str(node["metadata"]["name"])
        entry = entries.get(name) or {}
        out.append(
            [
                name,
                str((node["metadata"].get("labels") or {}).get(RACK_LABEL, "")),
                _phase(daemons.get(name)),
                str(entry.get("index", "-")) if entry else "-",
                str(entry.get("status", "-")) if entry else "-",
                _phase(workers.get(name)),
            ]
        )
    return out


def domain_status(snapshot: Snapshot) -> str:
    """The domain's ``status.status`` (``-`` before the controller set one). Pure."""
    return str(((snapshot.domain or {}).get("status") or {}).get("status") or "-")


def missing(snapshot: Snapshot, workload: Workload) -> list[str]:
    """What is not there yet for the demo to be done (empty when done). Pure."""
    out = []
    if snapshot.domain is None:
        out.append(f"ComputeDomain {workload.namespace}/{workload.domain} does not exist")
    elif domain_status(snapshot) != "Ready":
        ready = sum(
            1
            for e in ((snapshot.domain.get("status") or {}).get("nodes") or [])
            if e.get("status") == "Ready"
        )
        out.append(
            f"ComputeDomain {workload.namespace}/{workload.domain} Ready (status "
            f"{domain_status(snapshot)}, {ready}/{workload.workers} daemons Ready)"
        )
    running = [w for w in snapshot.workers if _phase(w) == "Running"]
    if len(running) < workload.workers:
        out.append(f"{workload.workers} workers Running ({len(running)} are)")
    return out


def render(snapshot: Snapshot, workload: Workload, elapsed: float) -> list[str]:
    """The progress lines: a heading and the node table. Pure."""
    running = sum(1 for w in snapshot.workers if _phase(w) == "Running")
    heading = (
        f"[{elapsed:5.1f}s] ComputeDomain {workload.namespace}/{workload.domain}: "
        f"{domain_status(snapshot)}  workers running {running}/{workload.workers}"
    )
    return [
        heading,
        *table(["NODE", "RACK", "DAEMON", "INDEX", "STATUS", "WORKER"], rows(snapshot)),
    ]


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell. Pure."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *body, strict=False)]
    return [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
        for row in [header, *body]
    ]


class Display:
    """Writes successive renderings to ``out``: redrawn in place on a terminal, else only the
    changed lines (the heading's clock is not a change)."""

    def __init__(self, out: TextIO | None = None, *, tty: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.tty = self.out.isatty() if tty is None else tty
        self._drawn = 0
        self._previous: list[str] = []

    def show(self, lines: Sequence[str]) -> None:
        """Draw ``lines`` (the first is the heading). Not idempotent: it writes."""
        if self.tty:
            text = "\x1b[1F" * self._drawn if self._drawn else ""
            text += "".join(f"\x1b[2K{line}\n" for line in lines)
            self.out.write(text)
            self._drawn = len(lines)
        else:
            body = list(lines[1:])
            if body != self._previous:
                changed = [line for line in body if line not in self._previous]
                self.out.write("".join(f"{line}\n" for line in [lines[0], *changed]))
                self._previous = body
        self.out.flush()

    def release(self) -> None:
        """Stop redrawing in place: later output goes below the table."""
        self._drawn = 0
