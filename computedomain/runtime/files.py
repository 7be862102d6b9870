"""Crash-safe file writes and the blocking-file adapters the event loop uses.

The kubelet plugin's checkpoint and CDI specs and the daemon's IMEX config and hosts file are all
written with :func:`atomic_write`: the data goes to a temporary file in the same directory and is
renamed over the target, so a reader (or a restart after a crash) sees either the old file or the
new one, never a torn one. A file that fails to parse is moved aside with :func:`move_aside`
(kept for diagnosis, out of the way of a clean start).

Atomicity and durability are separate. The rename is atomic for every process the moment it
returns, and the page cache outlives any process crash (SIGKILL, OOM kill, container restart):
only a kernel crash or a power loss can lose a write that was not fsynced, and both are a
reboot. So the default, ``durable=True``, also fsyncs the file and its directory, for state that
must survive a reboot; ``durable=False`` skips both for state a reboot invalidates anyway (the
plugin's checkpoint is dropped when the boot ID changes, and its per-claim CDI specs with it).

The ``async`` functions are small named ``asyncio.to_thread`` adapters, for coroutine code that
must not block its loop on disk I/O. (The kubelet plugin's prepare attempts write their small,
non-durable files on the loop instead, where a thread hop cost more than the write:
:mod:`computedomain.kubeletplugin.state`.)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from pathlib import Path

from computedomain.runtime import logs

_log = logs.get_logger(__name__)

PathLike = str | os.PathLike[str]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_temp_numbers = itertools.count()


def _create_temp(target: Path) -> tuple[int, str]:
    """Create ``.<name>.<pid>.<n>.tmp`` next to ``target`` exclusively; (fd, name).

    The process ID and a per-process counter make the name unique among the live writers of
    the directory, and the name says which process left it behind. ``O_EXCL`` keeps it safe:
    a leftover of a crashed process, or a writer in another PID namespace with the same PID,
    makes the create fail and the next number is tried.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    prefix = os.path.join(target.parent, f".{target.name}.{os.getpid()}")
    while True:
        name = f"{prefix}.{next(_temp_numbers)}.tmp"
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue


def atomic_write(path: PathLike, data: bytes, mode: int = 0o644, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically, and durably unless ``durable`` is false (see
    the module doc for when that is right). Blocking; idempotent.

    The temporary file lives in the target's directory (a rename across filesystems would not be
    atomic) and is removed if anything fails. Raises OSError (e.g. the directory is missing).
    """
    target = Path(path)
    fd, tmp_name = _create_temp(target)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    if durable:
        _fsync_dir(target.parent)


def move_aside(path: PathLike, reason: str) -> Path:
    """Rename a bad file to ``<name>.corrupt-<UTC timestamp>`` and log why. Blocking.

    Returns the new path; raises FileNotFoundError if ``path`` does not exist.
    """
    source = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = source.with_name(f"{source.name}.corrupt-{stamp}")
    suffix = 1
    while target.exists():
        target = source.with_name(f"{source.name}.corrupt-{stamp}-{suffix}")
        suffix += 1
    os.replace(source, target)
    _fsync_dir(source.parent)
    _log.warning(
        "moved a corrupt file aside", path=str(source), moved_to=str(target), reason=reason
    )
    return target


def read_bytes_or_none(path: PathLike) -> bytes | None:
    """The file's contents, or None when it does not exist. Blocking."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None


def remove_if_present(path: PathLike) -> bool:
    """Delete a file; False when it was already gone. Blocking; idempotent."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


async def write_atomic(path: PathLike, data: bytes, mode: int = 0o644) -> None:
    """:func:`atomic_write` off the event loop."""
    await asyncio.to_thread(atomic_write, path, data, mode)


async def read_optional(path: PathLike) -> bytes | None:
    """:func:`read_bytes_or_none` off the event loop."""
    return await asyncio.to_thread(read_bytes_or_none, path)


async def set_aside(path: PathLike, reason: str) -> Path:
    """:func:`move_aside` off the event loop."""
    return await asyncio.to_thread(move_aside, path, reason)


async def remove(path: PathLike) -> bool:
    """:func:`remove_if_present` off the event loop."""
    return await asyncio.to_thread(remove_if_present, path)


async def make_dirs(path: PathLike, mode: int = 0o755) -> None:
    """``os.makedirs(path, exist_ok=True)`` off the event loop."""
    await asyncio.to_thread(os.makedirs, path, mode, True)
