"""``cd-imex-daemon check``: the startup, liveness and readiness probe
(docs/compatibility.md#subcommands-and-exit-codes).

Succeeds when the clique ID is empty (no-op mode) or when ``nvidia-imex-ctl -c <cfg> -q``
exits 0 and prints exactly ``READY``. It asks only the local IMEX daemon. Upstream's messages
are kept, since people grep pod events and logs for them. Called by ``main``; runs the ctl
tool as a real process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TextIO

NOOP_MESSAGE = "check succeeded (noop, clique ID is empty)"
PROBE_TIMEOUT_S = 10.0  # the probes' timeout (docs/compatibility.md#daemon-daemonset)


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
    """Run ``argv`` (looked up on PATH) with its stdout and stderr on one pipe: its exit code
    (negative for a signal) and its output. Raises OSError when it cannot start, and
    TimeoutError when it has not finished within ``timeout`` seconds (it is killed and reaped
    first)."""
    try:
        done = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        msg = f"timed out after {timeout:g} s"
        raise TimeoutError(msg) from None
    return done.returncode, done.stdout.decode(errors="replace")
