"""The CPU priority of exec probes: below the containers they check.

Called by :mod:`.probers` for every exec probe. Every simulated node shares this machine's few
cores, where each real node has its own, and exec probes are the one load that grows with both
the number of nodes and the time they take to come up: each daemon pod runs its startup probe
(a fresh ``cd-imex-daemon check`` process) every second until its daemon is ready. At the
containers' priority the probes of a forming 2x18 domain took a third of the machine and slowed
the very daemons they were waiting for (``bench/e2e.py --sizes 2x18``: 26-27 s to Ready with
13.6-16.3 CPU-s of probes; at nice 10, 22.2-22.8 s with 11.0). So an exec probe runs at nice
:data:`PROBE_NICE`: it uses the CPU the containers leave, and on a machine with CPU to spare it
runs as before. Its timeout still applies, so a probe starved that long fails, as a real
kubelet's would on a saturated node.

Two knobs are turned because the probe runs in a session of its own (``setsid``): the process's
nice value, through ``nice`` in front of its command (deterministic, inherited by everything it
starts), and, where the kernel groups processes by session (``CONFIG_SCHED_AUTOGROUP``, on by
default in most distributions), its autogroup's, since the scheduler then weighs the session as
a whole and ignores the nice values inside it. Both only lower a priority, which needs no
privilege; a machine without ``nice`` or autogroups runs probes at normal priority.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
from collections.abc import Sequence
from typing import Final

__all__ = ["PROBE_NICE", "lower_session", "niced"]

PROBE_NICE: Final = 10


@functools.cache
def _nice_binary() -> str | None:
    return shutil.which("nice")


def niced(argv: Sequence[str], nice: int = PROBE_NICE) -> list[str]:
    """``argv`` run at ``nice`` (through coreutils ``nice``), or as it is where that is
    missing. Pure apart from the one lookup of ``nice`` on PATH."""
    binary = _nice_binary()
    return [binary, "-n", str(nice), *argv] if binary else list(argv)


def lower_session(pid: int, nice: int = PROBE_NICE) -> None:
    """Give the autogroup of ``pid`` (its session) the nice value ``nice``. Best effort: a
    process already gone, or a kernel without autogroups, leaves things as they are."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/autogroup", "w") as group:
        group.write(str(nice))
