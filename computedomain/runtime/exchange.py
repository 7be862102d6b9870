"""Swap two paths atomically: Linux ``renameat2(RENAME_EXCHANGE)``, through the C library.

Why :func:`computedomain.runtime.files.atomic_write` swaps instead of renaming for writes that
need not survive a reboot: on ext4 (the default ``auto_da_alloc`` mount option), a rename that
replaces an existing file starts writing the new file's data to the disk inside the rename, the
heuristic that protects applications which never fsync from empty files after a crash. For a
file rewritten several times a second that is most of the write: 88-96 us for a 600-byte
replace against 11 us for a swap and the unlink of the old content (3 x 3000 writes to /tmp,
ext4 on virtio). A swap replaces nothing, so the heuristic does not start, and the old content,
unlinked before it reached the disk, never costs any I/O. Readers see the old file or the new
one, as with a rename.

:func:`swap` says False wherever it cannot swap (no ``renameat2`` in the C library, a kernel or
filesystem without ``RENAME_EXCHANGE``, a target that is missing or not a regular file), and the
caller renames as before. The C function is looked up on first use (``ctypes`` is not imported
by processes that never write such a file).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# Errors that mean "this kernel, filesystem or target cannot swap": rename instead.
_UNSUPPORTED = frozenset(
    {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOENT, errno.EXDEV, errno.EPERM}
)


@functools.cache
def _renameat2() -> Callable[[bytes, bytes], int] | None:
    """``renameat2(AT_FDCWD, source, AT_FDCWD, target, RENAME_EXCHANGE)`` from the C library,
    answering the errno (0 on success); None where the library has none (glibc < 2.28)."""
    import ctypes  # noqa: PLC0415 -- see the module docstring

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    path, directory = ctypes.c_char_p, ctypes.c_int
    function.argtypes = [directory, path, directory, path, ctypes.c_uint]
    function.restype = ctypes.c_int

    def exchange(source: bytes, target: bytes) -> int:
        if function(_AT_FDCWD, source, _AT_FDCWD, target, _RENAME_EXCHANGE) == 0:
            return 0
        return ctypes.get_errno()

    return exchange


def swap(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> bool:
    """Exchange ``source`` and ``target`` atomically when ``target`` is a regular file; then
    ``source`` names the old content. False (nothing changed) where that is not possible, see
    the module doc. Raises OSError for any other failure."""
    try:
        if not stat.S_ISREG(os.lstat(target).st_mode):
            return False
    except FileNotFoundError:
        return False
    exchange = _renameat2()
    if exchange is None:
        return False
    error = exchange(os.fsencode(source), os.fsencode(target))
    if not error:
        return True
    if error in _UNSUPPORTED:
        return False
    raise OSError(error, os.strerror(error), os.fspath(target))
