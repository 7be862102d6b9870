"""Injectable time: the one seam through which our timing code reads clocks and sleeps.

The work queue, the mutation cache, the leader elector, the event recorder and the client's rate
limiter take a :class:`Clock` instead of calling :mod:`time` and :func:`asyncio.sleep` directly,
so their tests run on virtual time with :class:`ManualClock` and never depend on the speed of the
machine. Production code passes nothing and gets :data:`REAL_CLOCK`.

``monotonic()`` is for measuring intervals (deadlines, backoff, TTLs); ``time()`` is wall-clock
seconds since the epoch, for timestamps written into API objects.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    """What timing code needs from a clock."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (intervals and deadlines)."""
        ...

    def time(self) -> float:
        """Wall-clock seconds since the epoch (timestamps written to the API)."""
        ...

    async def sleep(self, delay: float) -> None:
        """Suspend the calling task for ``delay`` seconds of this clock's time."""
        ...


class RealClock:
    """The process's clocks and the event loop's sleep."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(max(0.0, delay))


REAL_CLOCK: Clock = RealClock()


class ManualClock:
    """A clock that only moves when a test calls :meth:`advance`.

    Sleepers park on futures keyed by their deadline; ``advance`` wakes, in deadline order, every
    sleeper whose deadline has been reached. A sleep of zero or less yields to the loop once and
    returns without waiting for ``advance``. Wall time is ``start_time`` plus the virtual seconds
    elapsed. Not thread-safe: use it from the event loop's thread.
    """

    def __init__(self, *, start: float = 1000.0, start_time: float = 1_800_000_000.0) -> None:
        self._now = start
        self._wall_offset = start_time - start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def time(self) -> float:
        return self._now + self._wall_offset

    async def sleep(self, delay: float) -> None:
        if delay <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + delay, next(self._seq), future))
        await future

    @property
    def sleepers(self) -> int:
        """How many tasks are currently parked in :meth:`sleep` (cancelled ones excluded)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    def next_deadline(self) -> float | None:
        """The earliest deadline among parked sleepers, or None when nobody sleeps."""
        self._drop_cancelled()
        return self._sleepers[0][0] if self._sleepers else None

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` and wake every sleeper now due (in deadline order).

        Woken tasks run when the caller next yields to the event loop.
        """
        if seconds < 0:
            msg = f"cannot move a clock backwards (advance by {seconds})"
            raise ValueError(msg)
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    async def advance_to_next(self) -> bool:
        """Jump to the earliest sleeper's deadline, wake it, and let the loop run a little.

        Returns False when nobody was sleeping.
        """
        deadline = self.next_deadline()
        if deadline is None:
            return False
        self.advance(max(0.0, deadline - self._now))
        await settle()
        return True

    def _drop_cancelled(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)


async def settle(rounds: int = 20) -> None:
    """Yield to the event loop ``rounds`` times so that woken tasks run their next step.

    For tests on a :class:`ManualClock`; it orders work on the loop, it does not wait for time.
    """
    for _ in range(rounds):
        await asyncio.sleep(0)
