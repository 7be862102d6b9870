"""The supervisor: fatal errors carry their cause, shutdown runs newest-first, signals stop it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from computedomain.runtime.supervisor import FatalError, Supervisor, run


async def test_critical_failure_stops_everything_with_its_cause() -> None:
    stopped: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append(name)

    async def boom() -> None:
        await asyncio.sleep(0)
        raise RuntimeError("lost the API")

    async def program() -> None:
        async with Supervisor(handle_signals=False) as sup:
            sup.start("first", forever("first"))
            sup.start("second", forever("second"))
            sup.start("boom", boom())
            sup.start("third", forever("third"))
            await sup.wait()

    with pytest.raises(FatalError) as info:
        await program()
    assert info.value.task == "boom"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert stopped == ["third", "second", "first"]  # reverse start order


async def test_non_critical_failure_is_only_logged() -> None:
    async def fails() -> None:
        raise ValueError("metrics port busy")

    async with Supervisor(handle_signals=False) as sup:
        task = sup.start("http", fails(), critical=False)
        await asyncio.wait({task})
        assert sup.fatal is None
        sup.stop("test done")
        await sup.wait()
    assert sup.stop_reason == "test done"


async def test_a_critical_task_that_returns_ends_the_process_cleanly() -> None:
    async def elector() -> None:
        return None

    async with Supervisor(handle_signals=False) as sup:
        sup.start("elector", elector())
        await asyncio.wait_for(sup.wait(), 5)
    assert sup.stop_reason == "task elector finished"


async def test_sigterm_requests_a_stop() -> None:
    async with Supervisor() as sup:
        sup.start("idle", asyncio.Event().wait())
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(sup.wait(), 5)
    assert sup.stop_reason == "signal SIGTERM"


def test_run_turns_outcomes_into_exit_codes() -> None:
    async def ok() -> int:
        return 0

    async def fatal() -> int:
        async with Supervisor(handle_signals=False) as sup:
            sup.start("x", _raise())
            await sup.wait()
        return 0

    assert run(ok) == 0
    assert run(fatal) == 1


async def _raise() -> None:
    raise OSError("socket gone")


def test_a_real_process_exits_zero_on_sigterm_and_one_on_fatal() -> None:
    program = textwrap.dedent(
        """
        import asyncio, sys
        from computedomain.runtime import logs
        from computedomain.runtime.supervisor import Supervisor, run

        async def main() -> int:
            async with Supervisor() as sup:
                if sys.argv[1] == "fatal":
                    async def bad() -> None:
                        raise RuntimeError("config went away")
                    sup.start("worker", bad())
                else:
                    sup.start("idle", asyncio.Event().wait())
                    print("ready", flush=True)
                await sup.wait()
            return 0

        logs.setup(0, "test")
        sys.exit(run(main))
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", program, "idle"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    failed = subprocess.run(
        [sys.executable, "-c", program, "fatal"], capture_output=True, timeout=30, check=False
    )
    assert failed.returncode == 1
    assert b"config went away" in failed.stderr
    assert b"level=error" in failed.stderr
