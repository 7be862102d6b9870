"""Read-your-writes: the newer of store and recorded write wins; entries go when stale."""

from __future__ import annotations

from typing import Any

from computedomain.kube.mutationcache import MutationCache, is_newer
from computedomain.kube.store import Store, index_by_label
from computedomain.runtime.clock import ManualClock

LABEL = "resource.nvidia.com/computeDomain"


def obj(name: str, rv: int, *, cd: str = "", uid: str = "u1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "resourceVersion": str(rv), "uid": uid}
    if cd:
        meta["labels"] = {LABEL: cd}
    return {"metadata": meta}


def make(clock: ManualClock | None = None, **kwargs: Any) -> tuple[Store, MutationCache]:
    store = Store({"cd": index_by_label(LABEL)})
    return store, MutationCache(store, clock=clock or ManualClock(), **kwargs)


def test_newer_write_wins_until_the_store_catches_up() -> None:
    store, cache = make()
    store.upsert(obj("a", 5))
    cache.mutation(obj("a", 7))
    assert cache.get("ns/a")["metadata"]["resourceVersion"] == "7"  # type: ignore[index]
    store.upsert(obj("a", 7))
    assert cache.get("ns/a") is store.get("ns/a")
    assert len(cache) == 0  # dropped once the store caught up


def test_older_write_loses_to_the_store() -> None:
    store, cache = make()
    store.upsert(obj("a", 9))
    cache.mutation(obj("a", 7))
    assert cache.get("ns/a")["metadata"]["resourceVersion"] == "9"  # type: ignore[index]


def test_an_older_recording_never_replaces_a_newer_one() -> None:
    _, cache = make()
    cache.mutation(obj("a", 8))
    cache.mutation(obj("a", 6))
    assert cache.get("ns/a")["metadata"]["resourceVersion"] == "8"  # type: ignore[index]


def test_include_adds_shows_created_objects_before_the_informer() -> None:
    _store, cache = make()
    cache.mutation(obj("new", 3, cd="x"))
    assert cache.get("ns/new") is not None
    assert [o["metadata"]["name"] for o in cache.list()] == ["new"]
    assert [o["metadata"]["name"] for o in cache.by_index("cd", "x")] == ["new"]
    _, strict = make(include_adds=False)
    strict.mutation(obj("new", 3, cd="x"))
    assert strict.get("ns/new") is None
    assert strict.by_index("cd", "x") == []


def test_entries_expire_after_ttl() -> None:
    clock = ManualClock()
    store, cache = make(clock, ttl=10.0)
    store.upsert(obj("a", 1))
    cache.mutation(obj("a", 2))
    clock.advance(9.9)
    assert cache.get("ns/a")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    clock.advance(0.2)
    assert cache.get("ns/a")["metadata"]["resourceVersion"] == "1"  # type: ignore[index]


def test_watch_delete_drops_the_entry_but_not_a_newer_incarnation() -> None:
    _store, cache = make()
    cache.mutation(obj("a", 4))
    cache.on_delete(obj("a", 5))
    assert cache.get("ns/a") is None
    cache.mutation(obj("a", 10, uid="u2"))  # re-created after the old one was deleted
    cache.on_delete(obj("a", 6, uid="u1"))  # late delete event of the old incarnation
    assert cache.get("ns/a")["metadata"]["uid"] == "u2"  # type: ignore[index]


def test_informer_events_drop_caught_up_entries() -> None:
    _, cache = make()
    cache.mutation(obj("a", 4))
    cache.on_update(obj("a", 3), obj("a", 3))
    assert len(cache) == 1
    cache.on_add(obj("a", 4))
    assert len(cache) == 0
    cache.mutation(obj("b", 4))
    cache.forget("ns/b")
    assert cache.get("ns/b") is None


def test_by_index_follows_the_newer_object() -> None:
    store, cache = make()
    store.upsert(obj("a", 1, cd="x"))
    store.upsert(obj("b", 1, cd="x"))
    cache.mutation(obj("a", 2, cd="y"))  # our write moved a from x to y
    assert [o["metadata"]["name"] for o in cache.by_index("cd", "x")] == ["b"]
    assert [o["metadata"]["name"] for o in cache.by_index("cd", "y")] == ["a"]


def test_is_newer_needs_integer_versions() -> None:
    assert is_newer(obj("a", 2), obj("a", 1))
    assert not is_newer(obj("a", 1), obj("a", 1))
    assert not is_newer({"metadata": {"resourceVersion": "abc"}}, obj("a", 1))
