"""Writing the files the daemon owns: atomically, and only when their content changes.

Used for ``imexd.cfg``, ``nodes.cfg`` and the simulation's hosts files (files in directories
that are ours, so a rename is safe; the production ``/etc/hosts`` is written in place by
:mod:`computedomain.daemon.hostsfile`). Blocking: async callers go through ``to_thread``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` through a temp file in the same directory, fsync, rename,
    and fsync the directory. Creates the directory. Idempotent; raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_if_changed(path: Path, text: str, mode: int = 0o644) -> bool:
    """Atomically write ``text`` unless ``path`` already holds it; whether it wrote.
    Raises OSError."""
    try:
        if path.read_text() == text:
            return False
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    atomic_write(path, text.encode(), mode)
    return True
