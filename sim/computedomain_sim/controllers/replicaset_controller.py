"""The simulated ReplicaSet controller: keeps :func:`.replicaset.plan`'s pods running and writes
each ReplicaSet's status, for the ReplicaSets the Deployment controller makes and for those
users create.

Started by :mod:`computedomain_sim.cluster`; the informers, expectations and pod writes are
:mod:`.podowners`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from computedomain.kube.resources import Resource

from . import names, replicaset
from .podowners import Decision, PodOwnerController

__all__ = ["REPLICA_SETS", "ReplicaSetController"]

REPLICA_SETS: Final = Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)


class ReplicaSetController(PodOwnerController):
    """``spec.replicas`` pods of the template for every ReplicaSet."""

    resource = REPLICA_SETS

    def decide(self, owner: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Decision:
        wanted = int((owner.get("spec") or {}).get("replicas", 1))
        suffixes = [names.random_suffix() for _ in range(wanted)]
        plan = replicaset.plan(owner, pods, suffixes, self.clock.time())
        return Decision(plan.creates, plan.deletes, plan.status, plan.recheck)
