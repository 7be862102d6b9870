"""The scheduler's index of taken devices answers as a walk over every cached claim would."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.store import Store, object_key
from computedomain.runtime.clock import ManualClock
from computedomain_sim.scheduler import allocation
from computedomain_sim.scheduler.allocated import AllocatedDevices

NAMES = ["a", "b", "c", "d"]
DEVICES = ["channel-0", "daemon-0", "gpu-0"]  # a small pool, so claims share devices


def claim(name: str, rv: int, devices: list[str]) -> dict[str, Any]:
    results = [{"driver": "d", "pool": "node-1", "device": d} for d in devices]
    status = {"allocation": {"devices": {"results": results}}} if devices else {}
    return {
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv)},
        "status": status,
    }


def walk(cache: MutationCache, exclude: set[str]) -> frozenset[allocation.DeviceId]:
    """What the index replaces: every cached claim's devices, but the excluded ones'."""
    return allocation.allocated_devices(c for c in cache.list() if object_key(c) not in exclude)


class Cluster:
    """A claims informer's store and handlers (cache first, as the scheduler registers them)."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.store = Store()
        self.cache = MutationCache(self.store, clock=self.clock)
        self.index = AllocatedDevices(self.cache, clock=self.clock)
        self.versions = itertools.count(1)

    def informer_upsert(self, name: str, devices: list[str]) -> None:
        new = claim(name, next(self.versions), devices)
        old = self.store.upsert(new)
        for handler in (self.cache, self.index):
            if old is None:
                handler.on_add(new)
            else:
                handler.on_update(old, new)

    def informer_delete(self, name: str) -> None:
        old = self.store.delete(f"ns/{name}")
        if old is not None:
            for handler in (self.cache, self.index):
                handler.on_delete(old)

    def own_write(self, name: str, devices: list[str]) -> None:
        self.index.mutation(claim(name, next(self.versions), devices))


operation: st.SearchStrategy[tuple[str, str, list[str]]] = st.one_of(
    st.tuples(st.just("upsert"), st.sampled_from(NAMES), st.lists(st.sampled_from(DEVICES))),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.just([])),
    st.tuples(st.just("write"), st.sampled_from(NAMES), st.lists(st.sampled_from(DEVICES))),
    st.tuples(st.just("query"), st.sampled_from(NAMES), st.just([])),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(operation, max_size=40), st.sets(st.sampled_from(NAMES)))
def test_taken_matches_a_walk_over_the_cache(ops: list[Any], exclude: set[str]) -> None:
    cluster = Cluster()
    for kind, name, devices in ops:
        if kind == "upsert":
            cluster.informer_upsert(name, devices)
        elif kind == "delete":
            cluster.informer_delete(name)
        elif kind == "write":
            cluster.own_write(name, devices)
        else:
            keys = {f"ns/{name}"}
            assert cluster.index.taken(exclude=keys) == walk(cluster.cache, keys)
    keys = {f"ns/{n}" for n in exclude}
    assert cluster.index.taken(exclude=keys) == walk(cluster.cache, keys)


def test_a_device_two_claims_hold_stays_taken_until_both_are_excluded() -> None:
    cluster = Cluster()
    cluster.informer_upsert("a", ["channel-0"])
    cluster.informer_upsert("b", ["channel-0"])
    device = allocation.DeviceId("d", "node-1", "channel-0")
    assert device in cluster.index.taken(exclude={"ns/a"})
    assert device not in cluster.index.taken(exclude={"ns/a", "ns/b"})


def test_an_expired_own_write_is_seen_at_the_next_recount() -> None:
    # Our write recorded a device; the informer never caught up and the cache entry expires
    # (no notice of that): the periodic recount brings the index back to what the cache says.
    cluster = Cluster()
    cluster.informer_upsert("a", [])
    cluster.own_write("a", ["gpu-0"])
    assert cluster.index.taken(exclude=()) == walk(cluster.cache, set())
    cluster.clock.advance(cluster.cache.ttl + 1)
    assert walk(cluster.cache, set()) == frozenset()
    assert cluster.index.taken(exclude=()) == frozenset()
