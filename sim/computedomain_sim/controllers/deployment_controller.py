"""The simulated Deployment controller: keeps :func:`.deployment.plan`'s replicas running.

Started by :mod:`computedomain_sim.cluster` (it runs the controller Deployment of
``deployments/``). The informers, expectations and pod writes are :mod:`.podowners`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from computedomain.kube.resources import DEPLOYMENTS

from . import deployment, names
from .podowners import Decision, PodOwnerController

__all__ = ["DeploymentController"]


class DeploymentController(PodOwnerController):
    """``spec.replicas`` pods of the template for every Deployment."""

    resource = DEPLOYMENTS

    def decide(self, owner: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Decision:
        wanted = int((owner.get("spec") or {}).get("replicas", 1))
        plan = deployment.plan(owner, pods, [names.random_suffix() for _ in range(wanted)])
        return Decision(plan.creates, plan.deletes, plan.status)
