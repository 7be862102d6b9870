"""Faults at random moments: the :class:`Fault` protocol and the seeded :class:`FaultScheduler`.

The API server's faults are decided per request (:mod:`.apiserver`); everything else that can
go wrong in a cluster happens *to* something at some moment: a component is SIGKILLed, a node
reboots (new boot ID, CDI directory wiped), a disk fills up while the plugin writes its
checkpoint. Each such fault is a :class:`Fault`: a kind, the targets it can strike now (names
such as ``plugin/node-1``), and :meth:`Fault.inject`, which strikes one and may return an undo
(a full disk is freed again, for example).

The simulation registers its faults (the ones of :mod:`.processes` and :mod:`.disk` need only
a way to find a process id; a node reboot needs the simulation's node object) and runs a
:class:`FaultScheduler`: inter-arrival times are exponential with the summed rate, the fault is
chosen by rate, the target uniformly among the sorted targets, the lasting faults last a
uniform time from ``hold`` — all from one ``random.Random(seed)``, so the sequence of events
(times, kinds, target choices) is the same in every run with the same seed. Tests fire events
one at a time with :meth:`FaultScheduler.fire`. Every event is kept in
:attr:`FaultScheduler.history` and counted in :attr:`FaultScheduler.counts`;
:meth:`FaultScheduler.heal` undoes what still lasts (before quiescence).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import attrs

from computedomain.runtime.clock import REAL_CLOCK, Clock
from computedomain_sim.faults.counts import FaultCounts

log = logging.getLogger(__name__)

Undo = Callable[[], Awaitable[None]]


@attrs.frozen
class Injected:
    """What one strike did: a line for the report, and how to undo it if it lasts."""

    detail: str
    undo: Undo | None = None


class Fault(Protocol):
    """Something that can go wrong to a target of the simulation."""

    @property
    def kind(self) -> str:
        """A short name (``kill``, ``full-disk``, ``reboot``): the counter's key."""
        ...

    def targets(self) -> Sequence[str]:
        """What it can strike now (empty: nothing, the event is skipped)."""
        ...

    async def inject(self, target: str) -> Injected | None:
        """Strike ``target``; None when it could not (e.g. the process had just exited)."""
        ...


@attrs.frozen
class Rate:
    """A fault and how often it strikes: ``per_second`` events on average."""

    fault: Fault
    per_second: float


@attrs.frozen
class FaultEvent:
    """One event of a run, as reported."""

    at: float  # seconds since the scheduler started
    kind: str
    target: str
    detail: str


class FaultScheduler:
    """Fires the registered faults at seeded random moments (see the module doc)."""

    def __init__(
        self,
        rates: Sequence[Rate],
        *,
        seed: int,
        hold: tuple[float, float] = (0.5, 3.0),
        counts: FaultCounts | None = None,
        clock: Clock | None = None,
    ) -> None:
        if any(r.per_second < 0 for r in rates):
            msg = "fault rates must not be negative"
            raise ValueError(msg)
        self.rates = tuple(rates)
        self.seed = seed
        self.hold = hold
        self.rng = random.Random(seed)
        self.counts = counts or FaultCounts()
        self.clock = clock or REAL_CLOCK
        self.history: list[FaultEvent] = []
        self._lasting: list[tuple[float, Undo]] = []
        self._start = self.clock.monotonic()

    def _choose(self) -> tuple[float, Fault | None]:
        """The wait before the next event and its fault (draws: wait, fault)."""
        total = sum(r.per_second for r in self.rates)
        if total <= 0:
            return (float("inf"), None)
        wait = self.rng.expovariate(total)
        pick = self.rng.random() * total
        for rate in self.rates:
            pick -= rate.per_second
            if pick < 0:
                return (wait, rate.fault)
        return (wait, self.rates[-1].fault)

    async def fire(self, fault: Fault) -> FaultEvent | None:
        """Strike one target of ``fault`` now (target by the seeded generator); records the
        event. Returns None when it has no target or could not strike."""
        targets = sorted(fault.targets())
        pick = self.rng.random()
        hold = self.rng.uniform(*self.hold)
        if not targets:
            return None
        target = targets[int(pick * len(targets))]
        injected = await fault.inject(target)
        if injected is None:
            return None
        event = FaultEvent(
            round(self.clock.monotonic() - self._start, 3), fault.kind, target, injected.detail
        )
        self.history.append(event)
        self.counts.record(fault.kind, target)
        log.info("fault: %s %s: %s", fault.kind, target, injected.detail)
        if injected.undo is not None:
            self._lasting.append((self.clock.monotonic() + hold, injected.undo))
        return event

    async def _expire(self) -> None:
        now = self.clock.monotonic()
        due = [undo for until, undo in self._lasting if until <= now]
        self._lasting = [(until, undo) for until, undo in self._lasting if until > now]
        for undo in due:
            await undo()

    async def run(self) -> None:
        """Fire events until cancelled (undoing lasting faults as their time comes)."""
        while True:
            wait, fault = self._choose()
            next_at = self.clock.monotonic() + wait
            while True:
                await self._expire()
                soonest = min([next_at, *(until for until, _ in self._lasting)])
                delay = soonest - self.clock.monotonic()
                if delay > 0:
                    await self.clock.sleep(min(delay, 3600.0))
                if self.clock.monotonic() >= next_at:
                    break
            if fault is not None:
                await self.fire(fault)

    async def heal(self) -> int:
        """Undo every lasting fault now; returns how many."""
        lasting, self._lasting = self._lasting, []
        for _, undo in lasting:
            await undo()
        return len(lasting)

    def report(self) -> dict[str, object]:
        """JSON-ready: seed, counts and the event history."""
        return {
            "seed": self.seed,
            **self.counts.snapshot(),
            "events": [attrs.asdict(e) for e in self.history],
        }


async def run_for(scheduler: FaultScheduler, seconds: float) -> None:
    """Run ``scheduler`` for ``seconds``, then heal what lasts."""
    task = asyncio.create_task(scheduler.run())
    try:
        await scheduler.clock.sleep(seconds)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await scheduler.heal()
