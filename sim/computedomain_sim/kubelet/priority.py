"""The CPU priority of startup probes: below everything else on the machine.

Called by :mod:`.probers` for every exec probe. Every simulated node shares this machine's few
cores, where each real node has its own, and startup probes are the one load that grows with
both the number of nodes and the time they take to come up: each daemon pod runs its startup
probe (a fresh ``cd-imex-daemon check`` process) every second until its daemon is ready, and
all but the last of those runs fail. At the containers' priority the startup probes of a
forming domain would take a large share of the machine and slow the very daemons they wait for.
So a startup probe runs at nice :data:`STARTUP_PROBE_NICE`: it gets the CPU the containers
leave, and on a machine with CPU to spare it runs as before (``bench/e2e.py`` shows the effect
on the time to Ready). A starved startup
probe that runs past its timeout counts as one more failure of the 1,200 the daemon's allows.
Liveness and readiness probes run at the containers' priority, as a kubelet runs them in the
container's cgroup: their failures restart a container or take a pod out of service, and a
busy machine must not cause those.

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

__all__ = ["STARTUP_PROBE_NICE", "lower_session", "niced"]

STARTUP_PROBE_NICE: Final = 19


@functools.cache
def _nice_binary() -> str | None:
    return shutil.which("nice")


def niced(argv: Sequence[str], nice: int) -> list[str]:
    """``argv`` run at ``nice`` (through coreutils ``nice``), or as it is where that is
    missing or ``nice`` is 0. Pure apart from the one lookup of ``nice`` on PATH."""
    binary = _nice_binary() if nice else None
    return [binary, "-n", str(nice), *argv] if binary else list(argv)


def lower_session(pid: int, nice: int) -> None:
    """Give the autogroup of ``pid`` (its session) the nice value ``nice`` (nothing for 0).
    Best effort: a process already gone, or a kernel without autogroups, leaves things as
    they are."""
    if not nice:
        return
    with contextlib.suppress(OSError), open(f"/proc/{pid}/autogroup", "w") as group:
        group.write(str(nice))
