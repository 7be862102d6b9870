"""Writing the files the daemon owns: atomically, creating their directory, only on change.

Used for ``imexd.cfg`` and ``nodes.cfg`` (files in directories that are ours, so a rename is
safe); the hosts file has its own two strategies in :mod:`computedomain.daemon.hostsfile`. The
atomic write itself is :func:`computedomain.runtime.files.atomic_write`. Blocking: async
callers use ``to_thread``.

Both files are written without fsync: the daemon renders them from its settings and the clique
at every start, before ``nvidia-imex`` starts, and a power loss or a kernel crash (the only
events an fsync protects against) reboots the node and so restarts the daemon pod, which
rewrites them. A reader never sees a partial file either way (the rename is atomic).
"""

from __future__ import annotations

from pathlib import Path

from computedomain.runtime import files


def atomic_write(path: Path, data: bytes, mode: int = 0o644, *, durable: bool = True) -> None:
    """Create ``path``'s directory if needed, then replace ``path`` atomically (and durably
    unless ``durable`` is false: :mod:`computedomain.runtime.files`). Idempotent; raises
    OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.atomic_write(path, data, mode, durable=durable)


def write_if_changed(path: Path, text: str, mode: int = 0o644) -> bool:
    """Atomically write ``text`` unless ``path`` already holds it; whether it wrote.
    Raises OSError."""
    try:
        if path.read_text() == text:
            return False
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    atomic_write(path, text.encode(), mode, durable=False)  # see the module docstring
    return True
