"""Clique pruning: drop daemon entries whose node no longer runs a daemon of that domain.

Daemons remove their own entry when they stop gracefully; pruning covers crashes, force
deletes and lost nodes. Upstream kept an entry alive while a daemon pod of *any* domain sat on
the node, including finished pods (hazard H4, docs/compatibility.md#upstream-hazards); here an
entry survives only
if a daemon pod *of this domain* that has not finished is on that node. Because a daemon
registers only after its pod exists, an entry without a cached pod usually means the pod cache
lags: a prune is therefore planned only after a live read has confirmed the pods (a
:class:`~.actions.ReadLivePods` first). The controller never creates or deletes cliques. Pure;
called by :mod:`~computedomain.controller.planning`.
"""

from __future__ import annotations

from collections.abc import Sequence

from computedomain.api.models import ComputeDomainClique
from computedomain.controller import aggregation
from computedomain.controller.actions import Action, Kind, PruneClique, ReadLivePods, Ref
from computedomain.controller.snapshot import Mode, Snapshot


def plan_prunes(snapshot: Snapshot, cliques: Sequence[ComputeDomainClique]) -> tuple[Action, ...]:
    """One PruneClique per clique with stale entries (clique mode only). Pure.

    Returns ``(ReadLivePods,)`` instead when a prune would rest on the cache alone.
    """
    if snapshot.mode is not Mode.CLIQUES:
        return ()
    present = aggregation.daemon_nodes(snapshot.effective_pods)
    prunes: list[Action] = []
    for clique in sorted(cliques, key=lambda c: (c.metadata.namespace, c.metadata.name)):
        stale = frozenset(d.node_name for d in clique.daemons if d.node_name not in present)
        if stale:
            meta = clique.metadata
            ref = Ref(Kind.CLIQUE, meta.namespace, meta.name, meta.uid)
            prunes.append(PruneClique(ref, stale, meta.resource_version))
    if prunes and snapshot.live_pods is None:
        return (ReadLivePods(snapshot.uid),)
    return tuple(prunes)
