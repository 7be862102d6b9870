"""Token bucket and per-item exponential backoff on a manual clock."""

from __future__ import annotations

import asyncio

import pytest

from computedomain.kube.ratelimit import (
    ItemExponentialBackoff,
    MaxOf,
    TokenBucket,
    default_controller_limiter,
)
from computedomain.runtime.clock import ManualClock, settle


def test_bucket_serves_burst_then_spaces_requests_at_qps() -> None:
    clock = ManualClock()
    bucket = TokenBucket(10.0, 3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)  # in debt: reservations queue up in order
    clock.advance(0.35)  # pays the debt of 2, earns 1.5
    assert [bucket.try_acquire() for _ in range(2)] == [True, False]
    clock.advance(100.0)  # refill is capped at burst
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_unlimited_bucket_never_waits() -> None:
    bucket = TokenBucket(0, 0, clock=ManualClock())
    assert all(bucket.reserve() == 0 for _ in range(1000))
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(5, 0)


async def test_acquire_waits_on_the_clock_and_cancel_returns_the_token() -> None:
    clock = ManualClock()
    bucket = TokenBucket(1.0, 1, clock=clock)
    await bucket.acquire()
    waiter = asyncio.create_task(bucket.acquire())
    await settle()
    assert not waiter.done()
    clock.advance(1.0)
    await settle()
    assert waiter.done()
    blocked = asyncio.create_task(bucket.acquire())
    await settle()
    blocked.cancel()
    await settle()
    clock.advance(1.0)
    assert bucket.try_acquire()  # the cancelled reservation gave its token back


def test_exponential_backoff_doubles_caps_and_resets() -> None:
    backoff: ItemExponentialBackoff[str] = ItemExponentialBackoff(0.005, 1.0)
    delays = [backoff.when("a") for _ in range(10)]
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert max(delays) == 1.0
    assert delays[-1] == 1.0
    assert backoff.num_requeues("a") == 10
    assert backoff.when("b") == 0.005  # per item
    backoff.forget("a")
    assert backoff.num_requeues("a") == 0
    assert backoff.when("a") == 0.005
    for _ in range(200):
        backoff.when("c")  # no overflow however often it fails
    assert backoff.when("c") == 1.0


def test_default_limiter_is_max_of_backoff_and_bucket() -> None:
    clock = ManualClock()
    limiter: MaxOf[str] = default_controller_limiter(
        base_delay=0.005, max_delay=10, qps=1, burst=2, clock=clock
    )
    assert limiter.when("a") == 0.005  # bucket has tokens: backoff dominates
    assert limiter.when("b") == 0.005
    assert limiter.when("c") == pytest.approx(1.0)  # bucket exhausted: bucket dominates
    assert limiter.num_requeues("a") == 1
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
