"""Live progress of the demo: one row per node (its rack, the driver's kubelet plugin on it,
the domain's daemon, the daemon's index and readiness, the worker) under a line about the
domain and the driver's controller.

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
from computedomain_sim.cluster.cluster import (
    CONTROLLER_DEPLOYMENT,
    DRIVER_NAMESPACE,
    PLUGIN_DAEMONSET,
)
from computedomain_sim.cluster.topology import RACK_LABEL

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
    plugins: tuple[Obj, ...] = ()  # the driver's kubelet plugin pods
    controllers: tuple[Obj, ...] = ()  # the driver's controller pods


async def gather(api: Api, workload: Workload) -> Snapshot:
    """Read nodes, the domain, the driver's pods (with the domain's daemons) and the workers.
    Raises API errors."""
    nodes, _ = await api.list_all(NODES)
    try:
        domain: Obj | None = await api.get(COMPUTE_DOMAINS, workload.domain, workload.namespace)
    except errors.NotFound:
        domain = None
    uid = str(((domain or {}).get("metadata") or {}).get("uid", ""))
    driver, _ = await api.list_all(PODS, DRIVER_NAMESPACE)
    selector = ",".join(f"{k}={v}" for k, v in workload.selector.items())
    workers, _ = await api.list_all(PODS, workload.namespace, label_selector=selector)

    def named(prefix: str) -> tuple[Obj, ...]:
        return tuple(p for p in driver if str(p["metadata"]["name"]).startswith(prefix))

    daemons = tuple(
        p
        for p in driver
        if uid and (p["metadata"].get("labels") or {}).get(names.COMPUTE_DOMAIN_LABEL) == uid
    )
    return Snapshot(
        nodes=tuple(nodes),
        domain=domain,
        daemons=daemons,
        workers=tuple(workers),
        plugins=named(f"{PLUGIN_DAEMONSET}-"),
        controllers=named(f"{CONTROLLER_DEPLOYMENT}-"),
    )


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
    """``NODE RACK PLUGIN DAEMON INDEX STATUS WORKER`` per node, sorted by name. Pure."""
    entries = {
        str(e.get("name")): e
        for e in ((snapshot.domain or {}).get("status") or {}).get("nodes") or []
    }
    daemons, workers = _on_node(snapshot.daemons), _on_node(snapshot.workers)
    plugins = _on_node(snapshot.plugins)
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: str(n["metadata"]["name"])):
        name = str(node["metadata"]["name"])
        entry = entries.get(name) or {}
        out.append(
            [
                name,
                str((node["metadata"].get("labels") or {}).get(RACK_LABEL, "")),
                _phase(plugins.get(name)),
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
    controller = _phase(snapshot.controllers[0]) if snapshot.controllers else "-"
    heading = (
        f"[{elapsed:5.1f}s] ComputeDomain {workload.namespace}/{workload.domain}: "
        f"{domain_status(snapshot)}  workers running {running}/{workload.workers}  "
        f"controller {controller}"
    )
    header = ["NODE", "RACK", "PLUGIN", "DAEMON", "INDEX", "STATUS", "WORKER"]
    return [heading, *table(header, rows(snapshot))]


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
            # The heading's leading "[  1.2s]" clock alone is no change.
            seen = [lines[0].split("] ", 1)[-1], *lines[1:]] if lines else []
            if seen != self._previous:
                changed = [line for line in lines[1:] if line not in self._previous]
                self.out.write("".join(f"{line}\n" for line in [lines[0], *changed]))
                self._previous = seen
        self.out.flush()

    def release(self) -> None:
        """Stop redrawing in place: later output goes below the table."""
        self._drawn = 0
