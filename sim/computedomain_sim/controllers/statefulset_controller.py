"""The simulated StatefulSet controller: stable, ordered pods as :func:`.statefulset.plan` says.

Started by :mod:`computedomain_sim.cluster`; the informers, expectations and pod writes are
:mod:`.podowners`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from computedomain.kube.resources import Resource

from . import statefulset
from .podowners import Decision, PodOwnerController

__all__ = ["STATEFUL_SETS", "StatefulSetController"]

STATEFUL_SETS: Final = Resource("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)


class StatefulSetController(PodOwnerController):
    """``<set>-0`` .. ``<set>-<replicas-1>`` for every StatefulSet."""

    resource = STATEFUL_SETS

    def decide(self, owner: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Decision:
        plan = statefulset.plan(owner, pods)
        return Decision(plan.creates, plan.deletes, plan.status)
