"""Orphan passes: which UIDs are orphans, and when passes run (on virtual time)."""

from __future__ import annotations

import asyncio

from computedomain.controller.cleanup import Cleanup, orphan_uids
from computedomain.runtime.clock import ManualClock, settle


def test_orphan_uids_are_the_labelled_ones_without_a_domain() -> None:
    alive = {"a", "c"}
    assert orphan_uids(["a", "b", "b", "c", "d"], alive.__contains__) == ["b", "d"]
    assert orphan_uids([], alive.__contains__) == []


class _Caches:
    """The two reads a pass makes, over fixed sets (what a synced cache would answer)."""

    def __init__(self) -> None:
        self.labelled = {"gone-ds", "alive"}
        self.nodes = {"gone-node"}
        self.calls: list[bool] = []

    def labelled_uids(self, *, nodes_only: bool = False) -> set[str]:
        self.calls.append(nodes_only)
        return set(self.nodes) if nodes_only else self.labelled | self.nodes

    def domain_exists(self, uid: str) -> bool:
        return uid == "alive"


class _Queue:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def add(self, key: str) -> None:
        self.keys.append(key)


async def test_passes_at_start_on_request_and_every_interval() -> None:
    clock = ManualClock()
    caches, queue = _Caches(), _Queue()
    cleanup = Cleanup(caches, queue, interval=600.0, clock=clock)  # type: ignore[arg-type]
    task = asyncio.create_task(cleanup.run())
    try:
        await settle()
        assert (caches.calls, queue.keys) == ([False], ["gone-ds", "gone-node"])
        cleanup.request(labels_only=True)
        cleanup.request(labels_only=True)  # merged with the first
        await settle()
        assert caches.calls == [False, True]
        cleanup.request(labels_only=True)
        cleanup.request()  # a full request wins over a labels-only one
        await settle()
        assert caches.calls == [False, True, False]
        clock.advance(599.0)
        await settle()
        assert len(caches.calls) == 3
        clock.advance(1.0)
        await settle()
        assert caches.calls == [False, True, False, False]
        assert cleanup.passes == 4
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_cancellation_is_never_swallowed() -> None:
    """Cancelled at any point of a pass or a wait, the loop ends (it once swallowed one)."""
    for yields in range(12):
        cleanup = Cleanup(_Caches(), _Queue(), interval=600.0, clock=ManualClock())  # type: ignore[arg-type]
        task = asyncio.create_task(cleanup.run())
        await settle()
        cleanup.request()
        for _ in range(yields):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=5)
        assert done, f"the loop ignored a cancellation {yields} steps after a request"
