"""The simulated Job controller: runs :func:`.job.plan`'s pods to completion and writes the Job's
status, so that ``kubectl create job`` and ``kubectl wait --for=condition=complete`` behave on
the embedded cluster as on a real one.

Started by :mod:`computedomain_sim.cluster`; the informers, expectations and pod writes are
:mod:`.podowners`'.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Final

from computedomain.kube.resources import Resource

from . import job, names
from .podowners import Decision, PodOwnerController

__all__ = ["JOBS", "JobController"]

JOBS: Final = Resource("batch", "v1", "jobs", "Job", namespaced=True)


class JobController(PodOwnerController):
    """Pods for every Job until it completes or fails."""

    resource = JOBS

    def decide(self, owner: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Decision:
        parallelism = int((owner.get("spec") or {}).get("parallelism", 1))
        now = dt.datetime.fromtimestamp(self.clock.time(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        plan = job.plan(owner, pods, [names.random_suffix() for _ in range(parallelism)], now)
        return Decision(plan.creates, plan.deletes, plan.status)
