"""Waiting for a condition with a deadline (never sleeping a fixed time to synchronise)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_until(
    predicate: Callable[[], bool], *, deadline_s: float = 10.0, what: str = "condition"
) -> None:
    """Poll ``predicate`` until it holds; fail with ``what`` after ``deadline_s`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while True:
        if predicate():
            return
        if loop.time() > deadline:
            msg = f"timed out after {deadline_s}s waiting for {what}"
            raise AssertionError(msg)
        await asyncio.sleep(0.005)
