"""One container's life: start, probe, restart with back-off, stop.

Called by :mod:`.podworker`, one :class:`ContainerRunner` per container of a pod. It starts the
process through :mod:`.runtime` (the launch spec is built fresh for every start by the pod
worker's callback), runs the startup probe and, once that has passed, the liveness and readiness
probes on their schedules (:mod:`.probers`), reports every failed probe run as the kubelet's
``Unhealthy`` Warning event (``Readiness probe failed: <output>``) through ``on_event``,
restarts the container as ``restartPolicy`` says after the CrashLoopBackOff delay, and keeps a
:class:`.status.ContainerRecord` that the pod worker turns into the pod's status (``on_change``
is called after every change). Time comes from an injectable clock.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from computedomain.runtime import logs
from computedomain.runtime.clock import Clock

from . import probers, restarts, runtime
from .launch import Image, LaunchError, LaunchSpec
from .probes import ProbeKind, ProbeResult, ProbeSpec, ProbeState
from .status import ContainerRecord, State

__all__ = ["ContainerRunner", "probe_failed_message", "rfc3339"]

_log = logs.get_logger(__name__)


def rfc3339(epoch: float) -> str:
    """A Kubernetes timestamp (RFC 3339, seconds, UTC). Pure."""
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _next_tick(elapsed: float, initial_delay: float, period: float) -> float:
    """The first tick (a multiple of ``period`` after the container's start) at or after both
    ``elapsed`` and ``initial_delay`` seconds. Pure."""
    earliest = max(elapsed, initial_delay)
    return math.ceil(earliest / period) * period if period > 0 else earliest


def probe_failed_message(kind: ProbeKind, output: str) -> str:
    """The kubelet's ``Unhealthy`` event message: ``Readiness probe failed: <output>``. Pure."""
    return f"{str(kind).capitalize()} probe failed: {output}"


@attrs.define
class ContainerRunner:
    """Runs one container until :meth:`stop` (or, without restarts, until it exits)."""

    container: Mapping[str, Any]
    restart_policy: str
    make_spec: Callable[[], LaunchSpec]
    pod_ip: str
    image: Image
    clock: Clock
    backoff: restarts.Backoff
    scratch: Path
    log_file: Path
    pid_dir: Path | None
    on_change: Callable[[], None]
    on_event: Callable[[str, str, str], None] = lambda _type, _reason, _message: None
    grace: float = 30.0  # terminationGracePeriodSeconds, used when a probe kills the container
    restarts_before: int = 0  # restarts of this container before a node reboot
    record: ContainerRecord = attrs.field(init=False)
    _process: runtime.ContainerProcess | None = attrs.field(init=False, default=None)
    _stopping: bool = attrs.field(init=False, default=False)
    _probes: dict[ProbeKind, ProbeState] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        self.record = ContainerRecord(
            name=str(self.container.get("name", "")),
            image=str(self.container.get("image", "")),
            restart_count=self.restarts_before,
        )

    def _set(self, **changes: Any) -> None:
        self.record = attrs.evolve(self.record, **changes)
        self.on_change()

    async def run(self) -> None:
        """Start the container and keep it going until stopped or finished. Returns when the
        container will not run again."""
        streak = 0
        while not self._stopping:
            try:
                spec = self.make_spec()
                self._process = await runtime.start(
                    spec, scratch=self.scratch, log_file=self.log_file, pid_dir=self.pid_dir
                )
            except (LaunchError, OSError) as exc:
                config = isinstance(exc, LaunchError)
                reason = "CreateContainerConfigError" if config else "RunContainerError"
                self._set(state=State.WAITING, reason=reason, message=str(exc))
                streak += 1
                await self._sleep_unless_stopped(self.backoff.delay(streak))
                continue
            if self._stop_requested():
                # stop() came while the process was being spawned, so it had none to signal.
                await self._process.stop(0)
                return
            started = self.clock.time()
            await self._supervise(spec)
            code = await self._process.wait()
            ran_for = self.clock.time() - started
            finished = rfc3339(self.clock.time())
            reason = "Completed" if code == 0 else "Error"
            again = not self._stopping and restarts.should_restart(self.restart_policy, code)
            self._set(
                state=State.TERMINATED,
                reason=reason,
                message="",
                exit_code=code,
                finished_at=finished,
                ready=False,
                will_restart=again,
            )
            if not again:
                return
            streak = self.backoff.next_streak(streak, ran_for)
            delay = self.backoff.delay(streak)
            self._set(
                state=State.WAITING,
                reason="CrashLoopBackOff",
                message=f"back-off {delay:g}s restarting failed container={self.record.name}",
                last_terminated=self.record.termination(),
                restart_count=self.record.restart_count + 1,
                started=False,
            )
            await self._sleep_unless_stopped(delay)

    def _stop_requested(self) -> bool:
        """Whether :meth:`stop` was called; a call, so that it is read anew after an await."""
        return self._stopping

    async def stop(self, grace: float) -> None:
        """Stop for good: SIGTERM, SIGKILL after ``grace`` seconds. Idempotent."""
        self._stopping = True
        if self._process is not None:
            await self._process.stop(grace)

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the container (e.g. SIGKILL for a node failure)."""
        if self._process is not None:
            self._process.signal(signum)

    async def _sleep_unless_stopped(self, delay: float) -> None:
        end = self.clock.monotonic() + delay
        while not self._stopping and self.clock.monotonic() < end:
            await self.clock.sleep(min(0.2, end - self.clock.monotonic()))

    async def _supervise(self, spec: LaunchSpec) -> None:
        """Mark the container running, run its probes until the process exits."""
        assert self._process is not None
        specs = {
            kind: ProbeSpec.from_container(self.container, kind)
            for kind in (ProbeKind.STARTUP, ProbeKind.LIVENESS, ProbeKind.READINESS)
        }
        self._probes = {kind: ProbeState.initial(kind) for kind, s in specs.items() if s}
        startup_done = specs[ProbeKind.STARTUP] is None
        self._set(
            state=State.RUNNING,
            reason="",
            message="",
            pid=self._process.pid,
            started_at=rfc3339(self.clock.time()),
            exit_code=None,
            finished_at=None,
            started=startup_done,
            ready=startup_done and specs[ProbeKind.READINESS] is None,
        )
        target = probers.ProbeTarget(
            container=self.container,
            pod_ip=self.pod_ip,
            pid=self._process.pid,
            env=spec.env,
            isolation_mode=spec.isolation,
            commands=self.image.commands,
        )
        exited = asyncio.ensure_future(self._process.wait())
        tasks = [asyncio.ensure_future(self._probe_loop(specs, target))]
        try:
            await asyncio.wait([exited, *tasks], return_when=asyncio.FIRST_COMPLETED)
            await exited  # the probes may end first: none configured, or a startup probe gave up
        except asyncio.CancelledError:
            # The pod's teardown is over (it cancels only after stop()), or the runner goes with
            # its node: a process that no runner watches must not run on, nor be waited for.
            self._process.signal(signal.SIGKILL)
            await self._process.wait()
            raise
        finally:
            for task in tasks:
                task.cancel()
            # gather, not a suppressed await per task: a cancellation of this runner that comes
            # meanwhile must propagate, not be taken for the probes' own.
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _probe_loop(
        self, specs: Mapping[ProbeKind, ProbeSpec | None], target: probers.ProbeTarget
    ) -> None:
        """The kubelet's schedule: every probe ticks on its period from the container's start
        and skips its ticks until ``initialDelaySeconds`` have passed; liveness and readiness
        also skip theirs until the startup probe has passed. Then readiness runs at once (the
        kubelet triggers it for a running container that is not ready) and liveness waits for
        its next tick (a daemon's liveness probe, every 60 s, did not run the moment its startup
        probe passed: that was a probe process per daemon of a forming domain, all at once)."""
        started = self.clock.monotonic()
        startup = specs[ProbeKind.STARTUP]
        if startup is not None and not await self._run_until(startup, target, ProbeResult.SUCCESS):
            return
        if startup is not None:
            self._set(started=True, ready=specs[ProbeKind.READINESS] is None)
        elapsed = self.clock.monotonic() - started
        loops = []
        if (liveness := specs[ProbeKind.LIVENESS]) is not None:
            first = _next_tick(elapsed, liveness.initial_delay, liveness.period)
            loops.append(self._run_until(liveness, target, None, delay=first - elapsed))
        if (readiness := specs[ProbeKind.READINESS]) is not None:
            delay = max(0.0, readiness.initial_delay - elapsed)
            loops.append(self._run_until(readiness, target, None, delay=delay))
        if loops:
            await asyncio.gather(*loops)

    async def _run_until(
        self,
        spec: ProbeSpec,
        target: probers.ProbeTarget,
        until: ProbeResult | None,
        *,
        delay: float | None = None,
    ) -> bool:
        """Probe on schedule, the first time after ``delay`` (default: the initial delay).
        Returns True once the result is ``until``; on a failed startup or liveness probe kills
        the container (the run loop restarts it) and returns False."""
        await self.clock.sleep(spec.initial_delay if delay is None else delay)
        while True:
            success, message = await probers.run_probe(spec, target)
            if not success:
                self.on_event("Warning", "Unhealthy", probe_failed_message(spec.kind, message))
            state = self._probes[spec.kind].observe(spec, success)
            self._probes[spec.kind] = state
            if spec.kind is ProbeKind.READINESS and (state.result is ProbeResult.SUCCESS) != (
                self.record.ready
            ):
                self._set(ready=state.result is ProbeResult.SUCCESS)
            if until is not None and state.result is until:
                return True
            if spec.kind is not ProbeKind.READINESS and state.result is ProbeResult.FAILURE:
                _log.info(
                    "probe failed, killing container",
                    container=self.record.name,
                    probe=str(spec.kind),
                    message=message,
                )
                if self._process is not None:
                    await self._process.stop(self.grace)
                return False
            await self.clock.sleep(spec.period)
