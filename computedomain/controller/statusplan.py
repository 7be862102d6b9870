"""Deciding a domain's status write: nodes, global status and the ``Ready`` condition.

Combines :mod:`~.aggregation` (which nodes, which global status) and :mod:`~.readiness` (the
condition) into the wire form of ``status`` and compares it with what the domain holds: a write
is planned only when the global status, the nodes (as a map by name) or a condition (ignoring
transition times) changed. ``nodes`` is left out when empty, as upstream's omitempty does and
as its e2e tests check. When the write would drop a node only because its daemon pod is missing
from the cache, the plan is a live read first. Pure; called by
:mod:`~computedomain.controller.planning`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cattrs

from computedomain.api import conditions, convert
from computedomain.api.models import ComputeDomain, ComputeDomainClique
from computedomain.controller import aggregation, readiness
from computedomain.controller.actions import Action, Kind, ReadLivePods, Ref, WriteStatus
from computedomain.controller.readiness import Problem
from computedomain.controller.snapshot import Snapshot


def parse_cliques(snapshot: Snapshot) -> list[ComputeDomainClique]:
    """The snapshot's cliques as models; an object that does not parse is skipped. Pure."""
    parsed = []
    for obj in snapshot.cliques:
        try:
            parsed.append(convert.clique(obj))
        except (cattrs.BaseValidationError, ValueError, TypeError):
            continue
    return parsed


def ready_conditions(
    snapshot: Snapshot, domain: ComputeDomain, state: readiness.Readiness
) -> list[dict[str, Any]]:
    """The domain's conditions, ``Ready`` set from ``state``, in wire form. Pure."""
    conds = conditions.set_condition(
        domain.status.conditions if domain.status else (),
        type=conditions.READY,
        status=state.status,
        reason=state.reason,
        message=state.message,
        now=snapshot.now,
        observed_generation=domain.metadata.generation or None,
    )
    return [convert.to_wire(c) for c in conds]


def desired_status(
    snapshot: Snapshot, domain: ComputeDomain, problems: Sequence[Problem] = ()
) -> tuple[dict[str, Any], aggregation.Aggregate]:
    """The status the domain should have (wire form), and the aggregate behind it. Pure."""
    current = domain.status.nodes if domain.status else ()
    pods = snapshot.effective_pods
    agg = aggregation.aggregate(snapshot.mode, current, parse_cliques(snapshot), pods)
    num_nodes = domain.spec.num_nodes
    state = readiness.readiness(nodes=agg.nodes, num_nodes=num_nodes, pods=pods, problems=problems)
    raw = dict((snapshot.domain or {}).get("status") or {})
    raw["status"] = str(aggregation.global_status(agg.nodes, num_nodes))
    if agg.nodes:
        raw["nodes"] = [convert.to_wire(n) for n in agg.nodes]
    else:
        raw.pop("nodes", None)
    raw["conditions"] = ready_conditions(snapshot, domain, state)
    return raw, agg


def plan_status(
    snapshot: Snapshot, domain: ComputeDomain, problems: Sequence[Problem] = ()
) -> tuple[Action, ...]:
    """A WriteStatus when something changed, a ReadLivePods when unsure, else nothing. Pure."""
    status, agg = desired_status(snapshot, domain, problems)
    if agg.doubtful and snapshot.live_pods is None:
        return (ReadLivePods(snapshot.uid),)
    old = domain.status
    new = convert.from_wire(type(old), status) if old else None
    if (
        old is not None
        and new is not None
        and (snapshot.domain or {}).get("status", {}).get("status") == status["status"]
        and aggregation.nodes_equal(old.nodes, new.nodes)
        and conditions.same_except_time(old.conditions, new.conditions)
    ):
        return ()
    ref = Ref(
        Kind.COMPUTE_DOMAIN, domain.metadata.namespace, domain.metadata.name, domain.metadata.uid
    )
    based_on = (snapshot.domain or {}).get("status")
    return (WriteStatus(ref, status, status["status"], based_on),)
