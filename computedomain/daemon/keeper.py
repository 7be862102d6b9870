"""Keeping ``nvidia-imex`` right: started when it can be, reloaded or restarted on change,
restarted with backoff when it dies, stopped on shutdown.

:mod:`computedomain.daemon.imexsync` tells the keeper what the child must see
(:meth:`ImexKeeper.want`, after the files are written); the keeper acts through
:mod:`computedomain.daemon.process`. One task (:meth:`ImexKeeper.run`) owns the child, so
there are no races between the watchdog, reloads and restarts.

The rules (docs/compatibility.md#hosts-file-and-index-changes-reach-nvidia-imex; F7 and H2 are
defined in the same document):

- Start only when the inputs are startable (DNS mode: the own name→IP mapping is already in
  the hosts file, F7).
- ``identity`` is what IMEX reads only at start (DNS mode: the own index, which fixes the IMEX
  node id; IP mode: the nodes file). A change restarts the child (fixes H2).
- ``names`` is what IMEX re-resolves on SIGUSR1. A change sends SIGUSR1, but IMEX handles at
  most one per ``reload_interval`` (5 s): a change inside the window is coalesced and sent when
  the window (plus a margin) ends, so the last change always arrives. The window also counts
  from a start.
- An unexpected exit restarts the child after 1 s, doubling to 30 s; a run that lasted
  ``stable_after`` resets the delay. A host conflict seen in the output is reported once per
  child run and blocks readiness until a later child has run for ``settle`` seconds.
- Cancelling :meth:`run` stops the child: SIGTERM, then SIGKILL after ``stop_timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import signal
from collections.abc import Awaitable, Callable, Hashable

import attrs

from computedomain.daemon import hostconflict
from computedomain.daemon.process import ImexProcess, ImexStartError
from computedomain.runtime import logs

log = logs.get_logger(__name__)

Spawn = Callable[[Callable[[str], None]], Awaitable[ImexProcess]]


@attrs.frozen
class ImexInputs:
    """What the child must see. ``identity`` None means: not startable yet."""

    identity: Hashable | None
    names: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class KeeperTiming:
    reload_interval: float = 5.0
    # Added to the interval: the child's window starts when it handles a signal, a little
    # after we send it, so signals spaced exactly ``reload_interval`` apart could be ignored.
    reload_margin: float = 0.5
    restart_initial: float = 1.0
    restart_max: float = 30.0
    stable_after: float = 60.0
    settle: float = 5.0
    stop_timeout: float = 10.0


class Event(enum.StrEnum):
    """What the keeper did, in order (for logs, metrics and tests)."""

    STARTED = "started"
    RELOADED = "reloaded"
    RESTARTED_FOR_IDENTITY = "restarted-for-identity"
    EXITED = "exited"
    START_FAILED = "start-failed"


@attrs.define
class KeeperStats:
    starts: int = 0
    reloads: int = 0
    identity_restarts: int = 0
    unexpected_exits: int = 0
    history: list[Event] = attrs.field(factory=list)


def restart_backoff(current: float, ran: float, timing: KeeperTiming) -> tuple[float, float]:
    """(wait before this restart, delay for the next one) after a run of ``ran`` seconds.
    Pure: a stable run resets the delay to the initial one; otherwise it doubles to the cap."""
    wait = timing.restart_initial if ran >= timing.stable_after else current
    return wait, min(wait * 2, timing.restart_max)


class ImexKeeper:
    """Supervises one ``nvidia-imex`` child. Not thread-safe; use from the event loop."""

    def __init__(
        self,
        spawn: Spawn,
        *,
        timing: KeeperTiming | None = None,
        on_finding: Callable[[hostconflict.Finding], None] = lambda _: None,
        on_blocked_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._spawn = spawn
        self.timing = timing or KeeperTiming()
        self._on_finding = on_finding
        self._on_blocked_change = on_blocked_change
        self._desired: ImexInputs | None = None
        self._loaded = ImexInputs(identity=None)
        self._proc: ImexProcess | None = None
        self._exit: asyncio.Task[int] | None = None
        self._finding: hostconflict.Finding | None = None
        self._blocked: hostconflict.Finding | None = None
        self._wake = asyncio.Event()
        self._last_reload = float("-inf")
        self._next_start = float("-inf")
        self._delay = self.timing.restart_initial
        self.stats = KeeperStats()

    # --- what others call ---------------------------------------------------------------------

    def want(self, inputs: ImexInputs) -> None:
        """Ask for ``inputs`` to be what the child sees. Never blocks; the latest call wins."""
        self._desired = inputs
        self._wake.set()

    @property
    def blocked_by(self) -> hostconflict.Finding | None:
        """The host conflict that stops nvidia-imex from running, if one was seen."""
        return self._blocked

    @property
    def loaded(self) -> ImexInputs:
        """What the running child has seen (at its start or its last SIGUSR1)."""
        return self._loaded

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def run(self) -> None:
        """Supervise until cancelled; then stop the child. Raises only CancelledError."""
        try:
            while True:
                timeout = await self._step()
                if timeout is None or timeout > 0:
                    await self._sleep(until=timeout)
        finally:
            await self._stop_child()

    # --- the state machine --------------------------------------------------------------------

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    async def _step(self) -> float | None:
        """Do the next due action; seconds until the next timed action (None: none, 0: now)."""
        now = self._now()
        want = self._desired
        proc = self._proc
        if proc is None:
            if want is None or want.identity is None:
                return None
            if now < self._next_start:
                return self._next_start - now
            await self._start(want)
            return 0
        timer: float | None = None
        if self._blocked is not None:
            settled_at = proc.started_at + self.timing.settle
            if now >= settled_at:
                self._set_blocked(None)
            else:
                timer = settled_at - now
        if want is None:
            return timer
        if want.identity is not None and want.identity != self._loaded.identity:
            log.info(
                "nvidia-imex must restart: its start-time input changed",
                old=self._loaded.identity,
                new=want.identity,
            )
            await self._stop_child()
            self.stats.identity_restarts += 1
            self.stats.history.append(Event.RESTARTED_FOR_IDENTITY)
            await self._start(want)
            return 0
        if want.names != self._loaded.names:
            spacing = self.timing.reload_interval + self.timing.reload_margin
            due = self._last_reload + spacing - now
            if due > 0:
                return due if timer is None else min(due, timer)
            if proc.send(signal.SIGUSR1):
                log.info("updated DNS/IP mapping, old process: send SIGUSR1", pid=proc.pid)
                self.stats.reloads += 1
                self.stats.history.append(Event.RELOADED)
            self._loaded = attrs.evolve(self._loaded, names=want.names)
            self._last_reload = now
            return 0
        return timer

    async def _sleep(self, *, until: float | None) -> None:
        waiters: list[asyncio.Future[object]] = [asyncio.ensure_future(self._wake.wait())]
        if self._exit is not None:
            waiters.append(self._exit)  # type: ignore[arg-type]
        try:
            await asyncio.wait(waiters, timeout=until, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiters[0].cancel()
        self._wake.clear()
        if self._exit is not None and self._exit.done():
            self._reap(self._exit.result())

    async def _start(self, want: ImexInputs) -> None:
        self._finding = None
        try:
            self._proc = await self._spawn(self._on_line)
        except ImexStartError as exc:
            log.error("nvidia-imex could not be started", error=str(exc))
            self.stats.history.append(Event.START_FAILED)
            self._schedule_restart(ran=0.0)
            return
        self._exit = asyncio.create_task(self._proc.wait(), name=f"imex-wait-{self._proc.pid}")
        self._loaded = want
        self._last_reload = self._now()
        self.stats.starts += 1
        self.stats.history.append(Event.STARTED)

    def _reap(self, code: int) -> None:
        proc, self._proc, self._exit = self._proc, None, None
        assert proc is not None
        ran = self._now() - proc.started_at
        log.warning("Child exited unexpectedly", code=code, ran_s=round(ran, 1))
        self.stats.unexpected_exits += 1
        self.stats.history.append(Event.EXITED)
        if self._finding is not None:
            finding, self._finding = self._finding, None
            self._set_blocked(finding)
            self._on_finding(finding)
        self._schedule_restart(ran)

    def _schedule_restart(self, ran: float) -> None:
        wait, self._delay = restart_backoff(self._delay, ran, self.timing)
        self._next_start = self._now() + wait
        log.info("Watchdog: start nvidia-imex again", in_s=round(wait, 2))

    def _set_blocked(self, finding: hostconflict.Finding | None) -> None:
        if finding != self._blocked:
            self._blocked = finding
            self._on_blocked_change()

    def _on_line(self, line: str) -> None:
        finding = hostconflict.detect(line)
        if finding is not None and self._finding is None:
            self._finding = finding

    async def _stop_child(self) -> None:
        proc, exit_task = self._proc, self._exit
        self._proc, self._exit = None, None
        if proc is None:
            return
        code = await proc.stop(grace=self.timing.stop_timeout)
        log.info("Child exited", code=code)
        if exit_task is not None:
            exit_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await exit_task
