"""Expectations cover the gap between a controller's write and its informer's event."""

from __future__ import annotations

from typing import Any

from computedomain.runtime.clock import ManualClock
from computedomain_sim.controllers.expectations import Expectations


def pod(name: str, owner: str = "ds-1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "ownerReferences": [{"uid": owner}]}}


def test_created_pods_count_until_seen_or_expired() -> None:
    clock = ManualClock()
    expect = Expectations(ttl=10, clock=clock)
    expect.created(pod("a"))
    expect.created(pod("x", owner="other"))
    assert [p["metadata"]["name"] for p in expect.adjust([], "ds-1")] == ["a"]
    expect.observed(pod("a"))
    assert expect.adjust([], "ds-1") == []
    expect.created(pod("b"))
    clock.advance(11)
    assert expect.adjust([], "ds-1") == []


def test_deleted_pods_look_terminating_until_gone() -> None:
    expect = Expectations(ttl=10, clock=ManualClock())
    expect.deleted("ns/a")
    (seen,) = expect.adjust([pod("a")], "ds-1")
    assert seen["metadata"]["deletionTimestamp"]
    expect.observed(pod("a"), gone=True)
    (again,) = expect.adjust([pod("a")], "ds-1")
    assert "deletionTimestamp" not in again["metadata"]
