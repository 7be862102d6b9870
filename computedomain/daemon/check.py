"""``cd-imex-daemon check``: the startup, liveness and readiness probe (daemon.md §1.1).

Succeeds when the clique ID is empty (no-op mode) or when ``nvidia-imex-ctl -c <cfg> -q``
exits 0 and prints exactly ``READY``. It asks only the local IMEX daemon. Upstream's messages
are kept, since people grep pod events and logs for them. Called by ``main``; runs the ctl
tool as a real process. ``subprocess`` is imported only then: the no-op probe of a node
without fabric (every second while a domain forms) has no use for it.
"""

from __future__ import annotations

import os
import sys
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
    import subprocess  # noqa: PLC0415 -- see the module docstring

    try:
        result = subprocess.run(
            [ctl_binary, "-c", os.fspath(config_path), "-q"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
            timeout=PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        msg = f"IMEX daemon check failed: error running {ctl_binary}: {exc}"
        raise CheckFailed(msg) from exc
    if result.returncode != 0:
        print(result.stdout, end="", file=sys.stderr)
        msg = (
            f"IMEX daemon check failed: error running {ctl_binary}: exit status {result.returncode}"
        )
        raise CheckFailed(msg)
    if result.stdout != "READY\n":
        msg = f"IMEX daemon not ready: {result.stdout}"
        raise CheckFailed(msg)
