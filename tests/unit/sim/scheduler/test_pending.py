"""Which pods wait for the simulated scheduler, and the index that finds them when a node or
a slice changes: a pod leaves it once bound or being deleted."""

from __future__ import annotations

from typing import Any

from computedomain.kube.store import Store
from computedomain_sim.scheduler.scheduler import PENDING, pending, pending_index


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team"}, "spec": dict(spec)}


def test_unbound_pods_of_this_scheduler_wait_others_do_not() -> None:
    assert pending(pod("a"))
    assert pending(pod("a", schedulerName="default-scheduler"))
    assert not pending(pod("a", nodeName="n0"))
    assert not pending(pod("a", schedulerName="another-scheduler"))
    deleting = pod("a")
    deleting["metadata"]["deletionTimestamp"] = "2026-12-02T08:00:00Z"
    assert not pending(deleting)


def test_the_index_follows_a_pod_from_pending_to_bound() -> None:
    store = Store({PENDING: pending_index})
    store.upsert(pod("a"))
    store.upsert(pod("b", nodeName="n0"))
    assert [p["metadata"]["name"] for p in store.by_index(PENDING, PENDING)] == ["a"]
    store.upsert(pod("a", nodeName="n1"))
    assert store.by_index(PENDING, PENDING) == []
