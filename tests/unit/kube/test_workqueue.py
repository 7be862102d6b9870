"""Work-queue semantics (client-go's): one worker per key, coalescing, delays, backoff, shutdown."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.kube.workqueue import RateLimitingQueue, ShutDown, run_workers
from computedomain.runtime.clock import ManualClock, settle


def make_queue(clock: ManualClock, **kwargs: object) -> RateLimitingQueue[str]:
    return RateLimitingQueue(clock=clock, name="test", **kwargs)  # type: ignore[arg-type]


async def test_readds_while_waiting_are_coalesced() -> None:
    queue = make_queue(ManualClock())
    for key in ["a", "b", "a", "a", "b"]:
        queue.add(key)
    assert len(queue) == 2
    assert [await queue.get(), await queue.get()] == ["a", "b"]


async def test_key_being_processed_is_not_handed_out_again_until_done() -> None:
    queue = make_queue(ManualClock())
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # dirty, but held back while a worker has it
    second = asyncio.create_task(queue.get())
    await settle()
    assert not second.done()
    queue.done("a")
    assert await asyncio.wait_for(second, 5) == "a"  # re-delivered once after done
    queue.done("a")
    assert len(queue) == 0


async def test_add_after_waits_for_the_clock_and_earliest_time_wins() -> None:
    clock = ManualClock()
    queue = make_queue(clock)
    queue.add_after("a", 5.0)
    queue.add_after("a", 1.0)
    queue.add_after("b", 2.0)
    queue.add_after("b", 9.0)  # later than pending: ignored
    await settle()
    assert len(queue) == 0
    assert queue.waiting_delayed == 2
    clock.advance(1.0)
    await settle()
    assert len(queue) == 1
    clock.advance(1.0)
    await settle()
    assert [await queue.get(), await queue.get()] == ["a", "b"]
    assert queue.waiting_delayed == 0


async def test_add_rate_limited_backs_off_exponentially_until_forget() -> None:
    clock = ManualClock()
    queue = make_queue(clock, base_delay=0.005, max_delay=0.02, qps=0)
    seen: list[float] = []
    for _ in range(4):
        start = clock.monotonic()
        queue.add_rate_limited("a")
        await settle()
        while not len(queue):
            assert await clock.advance_to_next()
        seen.append(round(clock.monotonic() - start, 6))
        assert await queue.get() == "a"
        queue.done("a")
    assert seen == [0.005, 0.01, 0.02, 0.02]
    assert queue.num_requeues("a") == 4
    queue.forget("a")
    assert queue.num_requeues("a") == 0


async def test_token_bucket_bounds_overall_retry_rate() -> None:
    queue = make_queue(ManualClock(), base_delay=0.0, qps=1.0, burst=2)
    for key in "abcd":
        queue.add_rate_limited(key)
    await settle()
    assert len(queue) == 2  # burst 2 immediate, the rest wait for tokens
    assert queue.waiting_delayed == 2


async def test_shutdown_drains_queue_then_ends_getters_and_ignores_adds() -> None:
    queue = make_queue(ManualClock())
    queue.add("a")
    queue.shutdown()
    queue.add("b")
    assert await queue.get() == "a"
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shutdown_wakes_blocked_getters() -> None:
    queue = make_queue(ManualClock())
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await settle()
    queue.shutdown()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, ShutDown) for r in results)


async def test_shutdown_drop_pending_discards_queued_keys() -> None:
    queue = make_queue(ManualClock())
    queue.add("a")
    queue.add_after("b", 1)
    queue.shutdown(drop_pending=True)
    with pytest.raises(ShutDown):
        await queue.get()


async def test_cancelled_getter_passes_its_wakeup_on() -> None:
    queue = make_queue(ManualClock())
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await settle()
    queue.add("a")
    first.cancel()  # woken but cancelled before it ran
    assert await asyncio.wait_for(second, 5) == "a"


class Recorder:
    def __init__(self) -> None:
        self.depths: list[int] = []
        self.adds = 0
        self.retries = 0
        self.latencies: list[float] = []
        self.durations: list[float] = []

    def depth(self, name: str, value: int) -> None:
        self.depths.append(value)

    def added(self, name: str) -> None:
        self.adds += 1

    def retried(self, name: str) -> None:
        self.retries += 1

    def queue_latency(self, name: str, seconds: float) -> None:
        self.latencies.append(seconds)

    def work_duration(self, name: str, seconds: float) -> None:
        self.durations.append(seconds)


async def test_metrics_hooks_measure_latency_and_work_on_the_clock() -> None:
    clock = ManualClock()
    metrics = Recorder()
    queue = make_queue(clock, metrics=metrics, qps=0)
    queue.add("a")
    clock.advance(2.0)
    assert await queue.get() == "a"
    clock.advance(3.0)
    queue.done("a")
    queue.add_rate_limited("a")
    assert metrics.adds == 1
    assert metrics.latencies == [2.0]
    assert metrics.durations == [3.0]
    assert metrics.retries == 1
    assert metrics.depths[:2] == [1, 0]


async def test_run_workers_applies_the_error_policy() -> None:
    clock = ManualClock()
    queue = make_queue(clock, qps=0)
    calls: Counter[str] = Counter()
    reported: list[tuple[str, str]] = []

    async def handler(key: str) -> None:
        calls[key] += 1
        if key == "ok":
            return
        if key == "perm":
            raise PermanentError("bad spec")
        if key == "later":
            raise TemporaryError("not yet", delay=30.0)
        if key == "mapped":
            raise LookupError("mapped to permanent by classify")
        if calls[key] < 3:
            raise RuntimeError("flaky")

    def classify(exc: Exception) -> PermanentError | None:
        return PermanentError(str(exc)) if isinstance(exc, LookupError) else None

    runner = asyncio.create_task(
        run_workers(
            queue,
            handler,
            workers=3,
            classify=classify,
            on_permanent=lambda key, err: reported.append((key, str(err))),
        )
    )
    for key in ["ok", "perm", "later", "mapped", "flaky"]:
        queue.add(key)
    await settle(50)
    for _ in range(5):  # let the flaky key's short backoffs elapse on virtual time
        clock.advance(0.1)
        await settle(50)
    assert calls["flaky"] == 3
    assert queue.num_requeues("flaky") == 0  # forgotten after success
    assert calls["ok"] == 1
    assert calls["perm"] == 1
    assert calls["mapped"] == 1
    assert sorted(reported) == [("mapped", "mapped to permanent by classify"), ("perm", "bad spec")]
    assert calls["later"] == 1
    clock.advance(30.0)
    await settle(50)
    assert calls["later"] == 2  # its own delay, not the backoff
    queue.shutdown()
    await asyncio.wait_for(runner, 5)


async def test_no_key_is_handled_by_two_workers_at_once() -> None:
    queue = make_queue(ManualClock(), qps=0)
    active: set[str] = set()
    overlaps: list[str] = []
    handled: Counter[str] = Counter()
    release = asyncio.Event()

    async def handler(key: str) -> None:
        if key in active:
            overlaps.append(key)
        active.add(key)
        handled[key] += 1
        await release.wait()
        active.discard(key)

    runner = asyncio.create_task(run_workers(queue, handler, workers=8))
    for _ in range(5):
        for key in "abc":
            queue.add(key)
        await settle()
    assert sorted(active) == ["a", "b", "c"]  # one worker each, the rest parked
    release.set()
    await settle(50)
    assert overlaps == []
    assert all(handled[k] == 2 for k in "abc")  # first run + one coalesced re-run
    queue.shutdown()
    await asyncio.wait_for(runner, 5)


async def test_run_workers_rejects_zero_workers() -> None:
    async def handler(key: str) -> None:
        return None

    with pytest.raises(ValueError, match="workers"):
        await run_workers(make_queue(ManualClock()), handler, workers=0)
