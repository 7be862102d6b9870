"""Waiting for a condition with a deadline, never a bare sleep: the one polling helper of every
test folder.

What the tests wait for (another process, a file, an object the API server has not got yet) has
no event to await, so a check is called until it holds. The deadline is only reached when a test
fails, so it is generous; the failure names what did not happen, the last answer and, when
given, an explanation (the e2e tests pass the doctor's report).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

import pytest

from computedomain.kube import errors

__all__ = ["eventually", "eventually_sync", "holds_within"]

T = TypeVar("T")


@overload
async def eventually(
    check: Callable[[], Awaitable[T | None]],
    *,
    within: float = ...,
    what: str = ...,
    every: float = ...,
    explain: Callable[[], Awaitable[str]] | None = ...,
) -> T: ...


@overload
async def eventually(
    check: Callable[[], T | None],
    *,
    within: float = ...,
    what: str = ...,
    every: float = ...,
    explain: Callable[[], Awaitable[str]] | None = ...,
) -> T: ...


async def eventually(
    check: Callable[[], Any],
    *,
    within: float = 60.0,
    what: str = "the condition",
    every: float = 0.02,
    explain: Callable[[], Awaitable[str]] | None = None,
) -> Any:
    """Call ``check`` (sync or async) until it returns something truthy, and return that.

    A check that raises NotFound has not happened yet (the object is not there). After
    ``within`` seconds (a hung check is cancelled) the test fails, naming ``what``.
    """
    last: Any = None
    timeout = asyncio.timeout(within)
    try:
        async with timeout:
            while True:
                try:
                    last = check()
                    if inspect.isawaitable(last):
                        last = await last
                except errors.NotFound as exc:
                    last = exc
                else:
                    if last:
                        return last
                await asyncio.sleep(every)
    except TimeoutError:
        if not timeout.expired():
            raise
    detail = f"\n{await explain()}" if explain is not None else ""
    pytest.fail(f"{what}: not within {within:g} s (last: {last!r}){detail}")


def eventually_sync(
    check: Callable[[], T | None],
    *,
    within: float = 10.0,
    what: str = "the condition",
    every: float = 0.02,
) -> T:
    """:func:`eventually` for a test without an event loop (a blocking client's test)."""
    deadline = time.monotonic() + within
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {within:g} s (last: {last!r})")
        time.sleep(every)


async def holds_within(check: Callable[[], object], seconds: float, *, every: float = 0.01) -> bool:
    """Whether ``check`` (sync or async) turns truthy within ``seconds`` (no failure when it
    does not): for a test that branches on whether something happened in time."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return True
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(every)
