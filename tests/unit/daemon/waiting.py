"""Waiting for a condition with a deadline (never a bare sleep as synchronisation)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def eventually(condition: Callable[[], bool], *, within: float = 30.0) -> None:
    """Return once ``condition()`` holds; raise TimeoutError after ``within`` seconds.

    Polls, because what the tests wait for (files, other processes) has no event to await.
    """
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
