"""A loop that survives failing steps still stops when cancelled, also when the step's
clean-up raises while the cancellation unwinds through it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from computedomain.runtime.cancellation import raise_if_cancelling


@contextlib.asynccontextmanager
async def release_that_fails() -> AsyncIterator[None]:
    try:
        yield
    finally:
        raise OSError(9, "Bad file descriptor")  # replaces whatever is unwinding


async def surviving_loop(entered: asyncio.Event, failures: list[BaseException]) -> None:
    while True:
        try:
            async with release_that_fails():
                entered.set()
                await asyncio.sleep(3600)
        except Exception as exc:
            failures.append(exc)
            raise_if_cancelling()
        await asyncio.sleep(0.01)


async def test_the_cancellation_survives_an_error_in_clean_up() -> None:
    entered = asyncio.Event()
    failures: list[BaseException] = []
    task = asyncio.create_task(surviving_loop(entered, failures))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    # The error did replace the cancellation (the case the helper exists for).
    assert [type(e) for e in failures] == [OSError]
    assert isinstance(failures[0].__context__, asyncio.CancelledError)


async def test_nothing_happens_without_a_cancellation() -> None:
    raise_if_cancelling()  # in a task, not cancelled
    await asyncio.sleep(0)
