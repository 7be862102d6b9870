"""Hypothesis state machine: the work queue's invariants hold under any sequence of operations.

The model tracks which keys are dirty (need work) and which are being processed; after every step
the queue must hand out exactly the dirty keys that are not in process, each once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from computedomain.kube.workqueue import RateLimitingQueue
from computedomain.runtime.clock import ManualClock, settle

KEYS = st.sampled_from(["a", "b", "c", "d"])
T = TypeVar("T")


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = ManualClock()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(clock=self.clock, qps=0)
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.delayed: dict[str, float] = {}  # key -> ready time (earliest wins)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.queue.shutdown(drop_pending=True)
        self.run(settle())
        self.loop.close()

    @rule(key=KEYS)
    def add(self, key: str) -> None:
        self.queue.add(key)
        self.dirty.add(key)

    @rule(key=KEYS, delay=st.sampled_from([0.0, 1.0, 2.0, 5.0]))
    def add_after(self, key: str, delay: float) -> None:
        async def go() -> None:
            self.queue.add_after(key, delay)

        self.run(go())
        if delay <= 0:
            self.dirty.add(key)
        else:
            ready = self.clock.monotonic() + delay
            self.delayed[key] = min(ready, self.delayed.get(key, ready))

    @rule(seconds=st.sampled_from([0.5, 1.0, 3.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.run(settle())
        now = self.clock.monotonic()
        for key, ready in list(self.delayed.items()):
            if ready <= now:
                del self.delayed[key]
                self.dirty.add(key)

    @precondition(lambda self: len(self.queue) > 0)
    @rule()
    def get(self) -> None:
        key = self.run(self.queue.get())
        assert key in self.dirty
        assert key not in self.processing, "a key was handed to two workers"
        self.dirty.discard(key)
        self.processing.add(key)

    @precondition(lambda self: bool(self.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.processing)))
        self.queue.done(key)
        self.processing.discard(key)

    @invariant()
    def queued_keys_are_the_dirty_idle_ones(self) -> None:
        assert len(self.queue) == len(self.dirty - self.processing)
        assert self.queue.processing == frozenset(self.processing)
        assert self.queue.waiting_delayed == len(self.delayed)


TestQueueMachine = QueueMachine.TestCase
TestQueueMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
