"""The manual clock orders sleepers by deadline and only moves when told."""

from __future__ import annotations

import asyncio

import pytest

from computedomain.runtime.clock import REAL_CLOCK, ManualClock, settle


async def test_sleepers_wake_in_deadline_order_when_advanced() -> None:
    clock = ManualClock()
    woke: list[str] = []

    async def sleeper(name: str, delay: float) -> None:
        await clock.sleep(delay)
        woke.append(name)

    tasks = [asyncio.create_task(sleeper(n, d)) for n, d in [("c", 3), ("a", 1), ("b", 2)]]
    await settle()
    assert clock.sleepers == 3
    clock.advance(1.5)
    await settle()
    assert woke == ["a"]
    clock.advance(10)
    await settle()
    assert woke == ["a", "b", "c"]
    await asyncio.gather(*tasks)


async def test_advance_to_next_and_cancelled_sleepers() -> None:
    clock = ManualClock(start=0.0, start_time=100.0)
    task = asyncio.create_task(clock.sleep(5))
    other = asyncio.create_task(clock.sleep(2))
    await settle()
    other.cancel()
    await settle()
    assert clock.next_deadline() == 5
    assert await clock.advance_to_next()
    assert task.done()
    assert clock.monotonic() == 5
    assert clock.time() == 105
    assert not await clock.advance_to_next()


async def test_zero_sleep_returns_without_advance_and_backwards_is_refused() -> None:
    clock = ManualClock()
    await asyncio.wait_for(clock.sleep(0), timeout=5)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)


async def test_real_clock_is_consistent() -> None:
    a = REAL_CLOCK.monotonic()
    await REAL_CLOCK.sleep(0)
    assert REAL_CLOCK.monotonic() >= a
    assert REAL_CLOCK.time() > 1e9
