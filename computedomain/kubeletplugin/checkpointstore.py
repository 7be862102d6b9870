"""Reading and writing the checkpoint file, boot-ID invalidation, corrupt files (effectful).

Called by the prepare/unprepare state machine under the node-wide lock (every read-modify-write
happens inside one attempt), by cleanup, and once at startup by wiring:

- at startup (:meth:`CheckpointStore.load_at_startup`): a missing file starts empty; a file
  written in another boot is replaced by an empty one, because after a reboot the CDI specs
  (tmpfs) and the IMEX daemons are gone and the kubelet prepares every claim again (#951); a
  file without a boot ID (written by an older version) gets the current one and keeps its
  claims; a corrupt file is moved aside, reported, and the plugin starts clean (#1100) instead
  of crash-looping;
- at run time, a file that turns corrupt is moved aside and reported, and the store carries on
  from the last state it wrote or read.

Writes are atomic (temp file and rename) but not fsynced (``durable=False`` in
:func:`computedomain.runtime.files.atomic_write`). Every process, a restarted plugin included,
sees a rename the moment it returns, and a process crash never loses the page cache; what an
fsync adds is survival of a kernel crash or power loss, and after either the boot ID differs
and the checkpoint is dropped anyway (#951). Upstream fsyncs the file (the kubelet's
checkpoint manager does it for every kind of state, reboot-scoped or not); here the fsyncs
would sit on every prepare's critical path for nothing. What a lost power can leave instead,
an empty or torn file from the earlier boot, is moved aside as corrupt at the next start: the
same clean start a readable file from that boot gets, with a Warning event besides.

Blocking; async callers use a thread.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable
from pathlib import Path

import attrs

from computedomain.kubeletplugin import upstreamcheckpoint
from computedomain.kubeletplugin.checkpoint import Checkpoint, CorruptCheckpoint, decode, encode
from computedomain.runtime import files, logs

log = logs.get_logger(__name__)


class Startup(enum.StrEnum):
    """What load_at_startup found."""

    FRESH = "fresh"  # no file
    KEPT = "kept"  # same boot
    ADOPTED_BOOT_ID = "adopted-boot-id"  # file had no boot ID
    REBOOTED = "rebooted"  # other boot: claims dropped
    CORRUPT = "corrupt"  # moved aside: claims dropped


@attrs.frozen
class StartupResult:
    outcome: Startup
    checkpoint: Checkpoint
    moved_to: Path | None = None
    reason: str = ""


def read_boot_id(path: Path) -> str:
    """The trimmed content of the boot-ID file; raises OSError when unreadable."""
    return path.read_text().strip()


# (file moved aside, why) -> None: wiring posts a Warning event.
CorruptReporter = Callable[[Path, str], None]


class CheckpointStore:
    """The checkpoint file in the plugin data directory. Not thread-safe: callers hold the lock."""

    def __init__(
        self,
        path: Path,
        *,
        on_corrupt: CorruptReporter | None = None,
    ) -> None:
        self.path = path
        self._on_corrupt = on_corrupt
        self._last = Checkpoint()
        self._last_stat: tuple[int, int, int] | None = None  # (inode, mtime ns, size) of _last

    def _quarantine(self, reason: str) -> Path:
        moved = files.move_aside(self.path, reason)
        log.warning("corrupt checkpoint moved aside", moved_to=str(moved), reason=reason)
        if self._on_corrupt is not None:
            self._on_corrupt(moved, reason)
        return moved

    def load_at_startup(self, boot_id: str) -> StartupResult:
        """Load or reset the checkpoint for this boot (see the module doc); writes the file."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            fresh = Checkpoint(boot_id=boot_id)
            self.write(fresh)
            return StartupResult(Startup.FRESH, fresh)
        try:
            current = decode(data)
        except CorruptCheckpoint as exc:
            moved = self._quarantine(str(exc))
            fresh = Checkpoint(boot_id=boot_id)
            self.write(fresh)
            return StartupResult(Startup.CORRUPT, fresh, moved_to=moved, reason=str(exc))
        if not current.boot_id:
            adopted = attrs.evolve(current, boot_id=boot_id)
            self.write(adopted)
            return StartupResult(Startup.ADOPTED_BOOT_ID, adopted)
        if current.boot_id != boot_id:
            fresh = Checkpoint(boot_id=boot_id)
            self.write(fresh)
            reason = f"written in boot {current.boot_id}, now {boot_id}"
            return StartupResult(Startup.REBOOTED, fresh, reason=reason)
        self._last = current
        return StartupResult(Startup.KEPT, current)

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def import_upstream(self, theirs: Path, now: float) -> int | None:
        """Convert upstream's checkpoint.json into ours, once (only while ours is absent).

        Returns the number of claims imported, None when there was nothing to import. Theirs
        is renamed ``.imported-<time>`` (or moved aside as corrupt when it cannot be read), so
        a later rollback to the Go plugin starts clean rather than from stale state.
        """
        if self.path.exists() or not theirs.exists():
            return None
        try:
            imported = upstreamcheckpoint.parse(theirs.read_bytes(), now=now)
        except CorruptCheckpoint as exc:
            files.move_aside(theirs, str(exc))
            return None
        self.write(imported)
        os.replace(theirs, theirs.with_name(f"{theirs.name}.imported-{int(now)}"))
        log.info("imported upstream's checkpoint", claims=len(imported.claims), path=str(theirs))
        return len(imported.claims)

    def cached(self) -> Checkpoint | None:
        """The last state read or written, if the file has not changed since (one stat)."""
        stat = self._stat()
        return self._last if stat is not None and stat == self._last_stat else None

    def read(self) -> Checkpoint:
        """The checkpoint on disk. A corrupt file is moved aside and the last good state used.

        The file is parsed again only when it changed since this store last read or wrote it
        (another process may write it: the node lock allows one writer at a time).
        """
        stat = self._stat()
        if stat is not None and stat == self._last_stat:
            return self._last
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return self._last
        try:
            self._last = decode(data)
            self._last_stat = stat
        except CorruptCheckpoint as exc:
            self._quarantine(str(exc))
            self.write(self._last)
        return self._last

    def write(self, checkpoint: Checkpoint) -> None:
        """Write atomically, not fsynced (see the module doc); raises OSError."""
        files.atomic_write(self.path, encode(checkpoint), mode=0o600, durable=False)
        self._last = checkpoint
        self._last_stat = self._stat()
