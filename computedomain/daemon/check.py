"""``cd-imex-daemon check``: the startup, liveness and readiness probe (daemon.md §1.1).

Succeeds when the clique ID is empty (no-op mode) or when ``nvidia-imex-ctl -c <cfg> -q``
exits 0 and prints exactly ``READY``. It asks only the local IMEX daemon. Upstream's messages
are kept, since people grep pod events and logs for them. Called by ``main``; runs the ctl
tool as a real process.

The probe is a fresh process every second per daemon pod while a domain forms, so what it
imports is its cost. It starts the ctl tool with ``os.posix_spawnp`` and reads its output
through a pipe rather than through ``subprocess``, whose import (threading, selectors, signal,
enum and more) cost 14 ms of the probe's CPU, more than the ctl tool itself; nor does it import
``typing``.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing's constant without importing typing (see the module docstring)
if TYPE_CHECKING:
    from typing import TextIO

NOOP_MESSAGE = "check succeeded (noop, clique ID is empty)"
PROBE_TIMEOUT_S = 10.0  # the kubelet's probe timeout (daemon.md §0.1)


class CheckFailed(Exception):
    """The probe failed; the message is what the kubelet shows."""


def check(
    clique_id: str,
    ctl_binary: str,
    config_path: str | os.PathLike[str],
    *,
    out: TextIO = sys.stdout,
) -> None:
    """Probe once. Raises CheckFailed with upstream's wording."""
    if not clique_id:
        print(NOOP_MESSAGE, file=out)
        return
    try:
        code, output = run_tool([ctl_binary, "-c", os.fspath(config_path), "-q"], PROBE_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        msg = f"IMEX daemon check failed: error running {ctl_binary}: {exc}"
        raise CheckFailed(msg) from exc
    if code != 0:
        print(output, end="", file=sys.stderr)
        msg = f"IMEX daemon check failed: error running {ctl_binary}: exit status {code}"
        raise CheckFailed(msg)
    if output != "READY\n":
        msg = f"IMEX daemon not ready: {output}"
        raise CheckFailed(msg)


def run_tool(argv: list[str], timeout: float) -> tuple[int, str]:
    """Run ``argv`` (looked up on PATH) with its stdout and stderr on one pipe, and stdin
    inherited, as ``subprocess.run(..., stderr=STDOUT, timeout=...)`` would: its exit code
    (negative for a signal) and its output. Raises OSError when it cannot start, and
    TimeoutError when it has not finished within ``timeout`` seconds (it is killed and
    reaped first)."""
    import select  # noqa: PLC0415 -- a C module; only a probe that asks the daemon needs it

    reader, writer = os.pipe()  # both close-on-exec: the child sees only its dup2 copies
    try:
        pid = os.posix_spawnp(
            argv[0],
            argv,
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, writer, 1), (os.POSIX_SPAWN_DUP2, writer, 2)],
        )
    except BaseException:
        os.close(reader)
        raise
    finally:
        os.close(writer)
    chunks: list[bytes] = []
    try:
        poller = select.poll()
        poller.register(reader, select.POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                import signal  # noqa: PLC0415 -- only a hung tool needs it

                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                msg = f"timed out after {timeout:g} s"
                raise TimeoutError(msg)
            chunk = os.read(reader, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(reader)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")
