"""Killing components: SIGKILL of a process at a random moment (a :class:`~.schedule.Fault`).

The simulation (and the fault tests until it lands) knows which processes play which part:
``plugin/node-1``, ``daemon/node-1/<cd>``, ``controller``, ``imex/node-2``. It hands
:class:`KillProcess` a function returning that table (name -> pid) as it is now; whoever runs
the process (the simulated kubelet, a test harness) notices the exit and restarts it, as a real
kubelet restarts a container. SIGKILL gives the process no chance to clean up: files half
written, sockets left behind, leases still held are exactly what the restart must cope with.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping, Sequence

from computedomain_sim.faults.schedule import Injected

ProcessTable = Callable[[], Mapping[str, int]]  # name -> pid of the processes alive now


class KillProcess:
    """Send ``sig`` (default SIGKILL) to one process of the table."""

    def __init__(
        self, processes: ProcessTable, *, sig: signal.Signals = signal.SIGKILL, kind: str = "kill"
    ) -> None:
        self._processes = processes
        self._sig = sig
        self._kind = kind

    @property
    def kind(self) -> str:
        return self._kind

    def targets(self) -> Sequence[str]:
        return sorted(self._processes())

    async def inject(self, target: str) -> Injected | None:
        pid = self._processes().get(target)
        if pid is None:
            return None
        try:
            os.kill(pid, self._sig)
        except ProcessLookupError:
            return None
        return Injected(f"{self._sig.name} pid {pid}")
