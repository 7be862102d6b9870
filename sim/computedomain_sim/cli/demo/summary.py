"""The demo's closing summary: how long the domain took to be Ready, each clique's members
(index, IP and DNS name), and the IMEX channel devices each worker saw.

Called by :mod:`.session` once the domain is Ready and every worker is Running.
:func:`gather` reads the facts: the members from the ComputeDomainClique objects of the domain
(falling back to ``ComputeDomain.status.nodes``), the DNS names from the daemons' own hosts files
in the simulated nodes' pod directories (an index without one there gets the built-in DNS-name
policy's name, and the summary says which), the channel devices from each worker's container log
under ``<state>/nodes/<node>/var/log/pods/``. :func:`render` is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from computedomain.api import names
from computedomain.kube import errors
from computedomain.kube.resources import COMPUTE_DOMAIN_CLIQUES
from computedomain.kube.rest import Api
from computedomain_sim.cluster.cluster import DRIVER_NAMESPACE
from computedomain_sim.cluster.layout import StateLayout
from computedomain_sim.kubelet.paths import NodePaths

from .progress import Snapshot, table
from .workload import CHANNELS_MARKER, WORKER_CONTAINER

__all__ = ["Member", "Summary", "Worker", "gather", "render"]

Obj = Mapping[str, Any]
FROM_HOSTS = "daemon hosts file"
FROM_POLICY = "built-in DNS-name policy"


@attrs.frozen
class Member:
    """One daemon of a clique."""

    clique: str
    node: str
    index: int
    ip: str
    status: str
    dns_name: str
    dns_source: str  # FROM_HOSTS or FROM_POLICY


@attrs.frozen
class Worker:
    pod: str
    node: str
    channels: str  # what the worker printed after CHANNELS_MARKER; "" if nothing yet


@attrs.frozen
class Summary:
    domain: str
    seconds_to_ready: float
    members: tuple[Member, ...]
    workers: tuple[Worker, ...]


def hosts_names(text: str) -> dict[str, str]:
    """IP → the first daemon DNS name a hosts file gives it. Pure."""
    prefix = names.dns_name(0).rstrip("0")
    out: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        for name in fields[1:]:
            if name.startswith(prefix):
                out.setdefault(fields[0], name)
    return out


def channels_seen(log: str) -> str:
    """The devices after the last :data:`CHANNELS_MARKER` line of a worker's log. Pure."""
    seen = ""
    for line in log.splitlines():
        if CHANNELS_MARKER in line:
            seen = line.split(CHANNELS_MARKER, 1)[1].strip()
    return seen


def _node_paths(layout: StateLayout, node: str) -> NodePaths:
    return NodePaths(layout.nodes_dir / node)


def worker_log(layout: StateLayout, pod: Obj) -> str:
    """Everything the pod's worker container wrote (all its restarts), or "" when nothing."""
    meta, node = pod.get("metadata") or {}, str((pod.get("spec") or {}).get("nodeName") or "")
    if not node:
        return ""
    directory = _node_paths(layout, node).log_dir(
        str(meta.get("namespace")), str(meta.get("name")), str(meta.get("uid"))
    )
    logs = sorted((directory / WORKER_CONTAINER).glob("*.log"))
    return "".join(p.read_text(errors="replace") for p in logs)


def _daemon_hosts(layout: StateLayout, daemons: Iterable[Obj]) -> dict[str, str]:
    """IP → DNS name from every daemon pod's hosts file that can be read."""
    found: dict[str, str] = {}
    for pod in daemons:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if not node or not uid:
            continue
        try:
            text = (_node_paths(layout, node).pod_dir(uid) / "etc-hosts").read_text()
        except (OSError, ValueError):
            continue
        for ip, name in hosts_names(text).items():
            found.setdefault(ip, name)
    return found


async def _entries(api: Api, snapshot: Snapshot) -> list[Obj]:
    """The domain's daemon entries: the cliques' (authoritative) or the status's."""
    uid = str(((snapshot.domain or {}).get("metadata") or {}).get("uid", ""))
    try:
        cliques, _ = await api.list_all(COMPUTE_DOMAIN_CLIQUES, DRIVER_NAMESPACE)
    except errors.NotFound:
        cliques = []
    entries = [
        daemon
        for clique in cliques
        if str(clique["metadata"]["name"]).startswith(f"{uid}.")
        for daemon in clique.get("daemons") or []
    ]
    if entries:
        return [{**e, "name": e.get("nodeName")} for e in entries]
    return list(((snapshot.domain or {}).get("status") or {}).get("nodes") or [])


async def gather(
    api: Api, layout: StateLayout, snapshot: Snapshot, *, seconds_to_ready: float
) -> Summary:
    """The summary of a done demo (``snapshot`` taken when it was done). Raises API errors."""
    hosts = _daemon_hosts(layout, snapshot.daemons)
    members = []
    for entry in await _entries(api, snapshot):
        ip, index = str(entry.get("ipAddress", "")), int(entry.get("index", 0))
        members.append(
            Member(
                clique=str(entry.get("cliqueID", "")),
                node=str(entry.get("name", "")),
                index=index,
                ip=ip,
                status=str(entry.get("status", "")),
                dns_name=hosts.get(ip) or names.dns_name(index),
                dns_source=FROM_HOSTS if ip in hosts else FROM_POLICY,
            )
        )
    workers = [
        Worker(
            pod=str(pod["metadata"]["name"]),
            node=str((pod.get("spec") or {}).get("nodeName") or ""),
            channels=channels_seen(worker_log(layout, pod)),
        )
        for pod in snapshot.workers
    ]
    meta = (snapshot.domain or {}).get("metadata") or {}
    return Summary(
        domain=f"{meta.get('namespace')}/{meta.get('name')}",
        seconds_to_ready=seconds_to_ready,
        members=tuple(sorted(members, key=lambda m: (m.clique, m.index))),
        workers=tuple(sorted(workers, key=lambda w: w.node)),
    )


def render(summary: Summary) -> list[str]:
    """The summary's lines. Pure."""
    out = [
        f"ComputeDomain {summary.domain} Ready {summary.seconds_to_ready:.1f}s after it was "
        "created",
    ]
    cliques: dict[str, list[Member]] = {}
    for member in summary.members:
        cliques.setdefault(member.clique, []).append(member)
    for clique, members in sorted(cliques.items()):
        out += ["", f"clique {clique}:"]
        body = [[str(m.index), m.dns_name, m.ip, m.node, m.status] for m in members]
        out += ["  " + line for line in table(["INDEX", "DNS NAME", "IP", "NODE", "STATUS"], body)]
    sources = sorted({m.dns_source for m in summary.members})
    if sources:
        out.append(f"(DNS names from the {' and the '.join(sources)})")
    out += ["", "workers:"]
    body = [[w.node, w.pod, w.channels or "(nothing printed)"] for w in summary.workers]
    out += ["  " + line for line in table(["NODE", "POD", "IMEX CHANNEL DEVICES SEEN"], body)]
    return out
