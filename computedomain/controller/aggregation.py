"""Status aggregation rules: which nodes a domain lists, and its global status.

Upstream's rules (docs/compatibility.md#status-aggregation), as pure functions of cached objects:

- clique mode: every daemon entry of every clique of the domain, copied as is, then one entry
  per non-fabric daemon pod;
- status mode: the fabric entries the daemons wrote into ``status.nodes`` that still have a
  daemon pod of the domain on their node, then the non-fabric pods;
- a non-fabric pod (clique label present and empty) with a node and an IP becomes
  ``{cliqueID: "", index: -1}``, Ready when its pod's Ready condition is True (plus our
  additive ``podUID``);
- the global status is NotReady when fewer entries than ``numNodes`` exist or an entry is
  explicitly NotReady (an entry without status counts as ready), else Ready.

Deliberate differences, each fixing a reported hazard: status mode keeps a fabric entry by
*node* (a daemon pod of this domain on that node) instead of by pod IP, so an IP change or reuse
neither drops a live node nor keeps a dead one; entries are unique by name
(the CRD declares a list-map, which a real API server enforces); and the entries dropped only
because no pod was found in the cache are reported as *doubtful*, for a live read before any
write (upstream #1418). Called by :mod:`~computedomain.controller.statusplan`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from computedomain.api import models
from computedomain.api.models import ComputeDomainClique, ComputeDomainNode, Status
from computedomain.controller import objects
from computedomain.controller.objects import JsonObject
from computedomain.controller.snapshot import Mode

NON_FABRIC_INDEX = -1


@attrs.frozen
class Aggregate:
    """The nodes a domain should list, and the entries dropped for want of a cached pod."""

    nodes: tuple[ComputeDomainNode, ...]
    doubtful: frozenset[str] = frozenset()


def daemon_nodes(pods: Iterable[JsonObject], *, fabric_only: bool = False) -> frozenset[str]:
    """Nodes with a daemon pod that has not finished (optionally: fabric pods only). Pure."""
    return frozenset(
        node
        for pod in pods
        if (node := objects.pod_node(pod))
        and not objects.pod_finished(pod)
        and (objects.pod_fabric(pod) or not fabric_only)
    )


def non_fabric_nodes(pods: Iterable[JsonObject]) -> list[ComputeDomainNode]:
    """One entry per non-fabric pod that has a node and an IP, sorted by node. Pure."""
    found = []
    for pod in pods:
        node = ((pod.get("spec") or {}).get("nodeName")) or ""
        ip = objects.pod_ip(pod)
        if objects.pod_fabric(pod) or not node or not ip:
            continue
        status = Status.READY if objects.pod_ready(pod) else Status.NOT_READY
        found.append(
            ComputeDomainNode(
                name=str(node),
                ip_address=ip,
                clique_id="",
                index=NON_FABRIC_INDEX,
                status=status,
                pod_uid=objects.uid(pod) or None,
            )
        )
    return sorted(found, key=lambda n: n.name)


def clique_nodes(cliques: Iterable[ComputeDomainClique]) -> list[ComputeDomainNode]:
    """Every daemon entry of every clique, cliques by name, entries in their order. Pure."""
    ordered = sorted(cliques, key=lambda c: c.metadata.name)
    return [daemon.as_node() for clique in ordered for daemon in clique.daemons]


def unique_by_name(nodes: Iterable[ComputeDomainNode]) -> tuple[ComputeDomainNode, ...]:
    """The first entry of each name, order kept. Pure."""
    seen: dict[str, ComputeDomainNode] = {}
    for node in nodes:
        seen.setdefault(node.name, node)
    return tuple(seen.values())


def aggregate(
    mode: Mode,
    current: Sequence[ComputeDomainNode],
    cliques: Iterable[ComputeDomainClique],
    pods: Sequence[JsonObject],
) -> Aggregate:
    """The entries ``status.nodes`` should hold (upstream's rule with the fixes above). Pure."""
    if mode is Mode.CLIQUES:
        return Aggregate(unique_by_name([*clique_nodes(cliques), *non_fabric_nodes(pods)]))
    fabric = daemon_nodes(pods, fabric_only=True)
    kept = [n for n in current if n.clique_id != "" and n.name in fabric]
    doubtful = frozenset(n.name for n in current if n.clique_id != "" and n.name not in fabric)
    return Aggregate(unique_by_name([*kept, *non_fabric_nodes(pods)]), doubtful)


def global_status(nodes: Sequence[ComputeDomainNode], num_nodes: int) -> Status:
    """Upstream's global rule; ``numNodes: 0`` with no nodes is Ready. Pure."""
    if len(nodes) < num_nodes:
        return Status.NOT_READY
    if any(n.status is Status.NOT_READY for n in nodes):
        return Status.NOT_READY
    return Status.READY


def nodes_equal(a: Sequence[ComputeDomainNode], b: Sequence[ComputeDomainNode]) -> bool:
    """Equal as maps keyed by name (upstream's change detection: order is ignored). Pure."""
    return {n.name: n for n in a} == {n.name: n for n in b}


def node_ready(node: ComputeDomainNode) -> bool:
    """An entry counts as ready unless it says NotReady (entries without status: 59b575a3)."""
    return node.status is not models.Status.NOT_READY
