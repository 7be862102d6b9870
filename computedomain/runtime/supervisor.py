"""One supervisor per process: starts the long-running tasks, stops them in order, reports why.

A program's ``main`` wires its parts and then::

    async with Supervisor() as sup:
        sup.start("informers", informers.run())
        sup.start("http", http.serve(), critical=False)
        sup.start("controller", controller.run())
        await sup.wait()

:meth:`Supervisor.wait` returns on SIGTERM/SIGINT or when :meth:`Supervisor.stop` is called, and
raises :class:`FatalError` (with the failed task's exception as ``__cause__``) as soon as a
*critical* task fails. A critical task that simply returns also ends the process (cleanly): its
job is over, e.g. the leader elector lost the lease. A non-critical task's failure is logged and
the rest keep running. Leaving the ``async with`` cancels the tasks in reverse start order,
awaiting each one, so later parts (which use earlier ones) stop first.

:func:`run` is the ``main`` entry point: ``asyncio.run`` plus exit-code handling (a fatal error
is logged with its cause and gives 1).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any

from computedomain.runtime import logs

_log = logs.get_logger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class FatalError(Exception):
    """A critical task failed; ``__cause__`` is its exception, ``task`` its name."""

    def __init__(self, task: str, cause: BaseException) -> None:
        super().__init__(f"critical task {task!r} failed: {type(cause).__name__}: {cause}")
        self.task = task


class Supervisor:
    """See the module docstring. Use as ``async with``; one per process."""

    def __init__(self, *, handle_signals: bool = True) -> None:
        self._handle_signals = handle_signals
        self._tasks: list[tuple[str, asyncio.Task[Any]]] = []
        self._stop = asyncio.Event()
        self._fatal: FatalError | None = None
        self._installed: list[signal.Signals] = []
        self.stop_reason = ""

    async def __aenter__(self) -> Supervisor:
        if self._handle_signals:
            loop = asyncio.get_running_loop()
            for sig in STOP_SIGNALS:
                try:
                    loop.add_signal_handler(sig, self.stop, f"signal {sig.name}")
                except (NotImplementedError, RuntimeError, ValueError):
                    continue  # not the main thread, or not supported here
                self._installed.append(sig)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()
        loop = asyncio.get_running_loop()
        for sig in self._installed:
            loop.remove_signal_handler(sig)
        self._installed.clear()

    def start(
        self, name: str, coro: Coroutine[Any, Any, Any], *, critical: bool = True
    ) -> asyncio.Task[Any]:
        """Run ``coro`` as a supervised task named ``name``."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        task.add_done_callback(lambda t: self._finished(name, t, critical))
        self._tasks.append((name, task))
        _log.debug("started task", task=name, critical=critical)
        return task

    def stop(self, reason: str = "requested") -> None:
        """Ask :meth:`wait` to return (idempotent; safe from signal handlers)."""
        if not self._stop.is_set():
            self.stop_reason = reason
            _log.info("stopping", reason=reason)
            self._stop.set()

    @property
    def fatal(self) -> FatalError | None:
        return self._fatal

    async def wait(self) -> None:
        """Until a stop is requested; raises FatalError if a critical task failed."""
        await self._stop.wait()
        if self._fatal is not None:
            raise self._fatal

    async def shutdown(self) -> None:
        """Cancel every task, newest first, awaiting each. Idempotent."""
        while self._tasks:
            name, task = self._tasks.pop()
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                try:
                    await task
                except Exception as exc:
                    if self._fatal is None or self._fatal.__cause__ is not exc:
                        _log.warning("task failed while stopping", task=name, error=repr(exc))
            _log.debug("stopped task", task=name)

    def _finished(self, name: str, task: asyncio.Task[Any], critical: bool) -> None:
        if task.cancelled() or self._stop.is_set():
            return
        exc = task.exception()
        if exc is None:
            if critical:
                self.stop(f"task {name} finished")
            return
        if not critical:
            _log.error("task failed", task=name, error=f"{type(exc).__name__}: {exc}")
            return
        fatal = FatalError(name, exc)
        fatal.__cause__ = exc
        self._fatal = fatal
        self.stop(f"task {name} failed")


def run(main: Callable[[], Awaitable[int]]) -> int:
    """Run ``main`` in a fresh event loop and return its exit code.

    A FatalError (or any other exception escaping ``main``) is logged with its cause and gives 1;
    an interrupt before the supervisor handles signals gives 130.
    """

    async def entry() -> int:
        return await main()

    try:
        return asyncio.run(entry())
    except KeyboardInterrupt:
        return 130
    except FatalError as exc:
        cause = exc.__cause__
        _log.error(
            "fatal error",
            task=exc.task,
            error=f"{type(cause).__name__}: {cause}" if cause else str(exc),
            exc_info=cause,
        )
        return 1
    except Exception as exc:
        _log.error("fatal error", error=f"{type(exc).__name__}: {exc}", exc_info=exc)
        return 1
