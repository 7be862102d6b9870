"""A full disk for one process: writes fail while the fault lasts (a :class:`~.schedule.Fault`).

What was evaluated, and why this is the mechanism:

- a tiny size-limited tmpfs (or a loop device) under the plugin's directories gives real
  ``ENOSPC``, but needs ``mount`` (root or a user namespace with a private mount namespace the
  whole process tree must live in); CI runners and containers often allow neither;
- FUSE needs a device and a library; ``/dev/full`` gives ``ENOSPC`` but cannot stand in for a
  directory (an atomic write creates a new file and renames it over the target);
- ``RLIMIT_FSIZE`` works for any user, on any filesystem, for exactly one process, and can be
  changed while the process runs (``prlimit(2)``, :func:`resource.prlimit`). A write that would
  make a file larger than the soft limit fails with ``EFBIG`` (Python ignores ``SIGXFSZ``, the
  signal that would otherwise kill the process). Creating, renaming and removing files still
  work, as they do on a full disk; only data writes fail. The errno differs (``EFBIG``, not
  ``ENOSPC``): components must treat any ``OSError`` of a write alike, which is what we want
  them to do anyway.

Caveat: the limit applies to every regular file the process writes, its log file included if
its stdout/stderr is a file — give it pipes while the fault is in use.
:class:`FullDisk` lowers the soft limit of one target process (``limit`` bytes, default 0: no
write can add data) and its undo restores the previous limit.
"""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Sequence

from computedomain_sim.faults.processes import ProcessTable
from computedomain_sim.faults.schedule import Injected


def set_file_size_limit(pid: int, limit: int | None) -> int:
    """Set the soft ``RLIMIT_FSIZE`` of ``pid`` (None: unlimited, up to the hard limit);
    returns the previous soft limit (``resource.RLIM_INFINITY`` when unlimited). Raises
    ProcessLookupError when the process is gone, PermissionError when not allowed."""
    soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    wanted = hard if limit is None else limit
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (wanted, hard))
    return soft


class FullDisk:
    """Writes of one process of the table fail with EFBIG while the fault lasts."""

    def __init__(self, processes: ProcessTable, *, limit: int = 0) -> None:
        self._processes = processes
        self._limit = limit

    @property
    def kind(self) -> str:
        return "full-disk"

    def targets(self) -> Sequence[str]:
        return sorted(self._processes())

    async def inject(self, target: str) -> Injected | None:
        pid = self._processes().get(target)
        if pid is None:
            return None
        try:
            before = set_file_size_limit(pid, self._limit)
        except ProcessLookupError:
            return None

        async def undo() -> None:
            # Gone meanwhile: a restarted process starts with its own limit.
            with contextlib.suppress(ProcessLookupError):
                set_file_size_limit(pid, None if before == resource.RLIM_INFINITY else before)

        return Injected(f"RLIMIT_FSIZE {self._limit} bytes for pid {pid}", undo)
