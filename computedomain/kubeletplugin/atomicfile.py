"""Crash-safe file writes and moving bad files aside.

A reader must see either the old or the new content of a checkpoint or CDI spec, never a torn
write: write a temporary file in the same directory, fsync it, rename it over the target, fsync
the directory. A file that cannot be parsed is renamed, never deleted, so an operator can look
at it. Blocking; async callers run these in a thread.

(``computedomain.runtime.files`` is planned to hold the project-wide version of this; the
plugin switches to it once it is on main.)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically. Idempotent; raises OSError."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            if sync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def move_aside(path: Path, reason: str, *, now: float | None = None) -> Path:
    """Rename ``path`` to ``<name>.<reason>-<unix time>`` beside it and return the new path."""
    stamp = int(now if now is not None else time.time())
    target = path.with_name(f"{path.name}.{reason}-{stamp}")
    counter = 0
    while target.exists():
        counter += 1
        target = path.with_name(f"{path.name}.{reason}-{stamp}.{counter}")
    os.replace(path, target)
    return target


def remove(path: Path) -> bool:
    """Delete ``path``; False when it was already gone. Idempotent; raises other OSErrors."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
