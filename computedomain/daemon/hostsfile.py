"""The hosts file that tells ``nvidia-imex`` which IP each daemon name has (DNS-names mode).

Called by :mod:`computedomain.daemon.imexsync` each time the clique's name→IP mapping may have
changed; calls only the file system. Three parts:

- :func:`render` (pure): drop every line we manage, keep every other line byte for byte, then
  append one header and one ``<ip>\\t<name>`` line per slot, in the order given: the caller
  gives every slot of the index space in index order, a slot no live daemon of the clique
  holds mapped to the sentinel address (as upstream does since 2026-09, so a lookup of an
  unused name never reaches cluster DNS; docs/compatibility.md#dns-names-and-the-hosts-file).
  It is idempotent, and unlike upstream it never accumulates header or blank lines (hazard
  H10) nor writes a name twice (upstream #561).
- :func:`live_mapping` (pure): the reverse, name → IP of the daemon lines that are not the
  sentinel's, for whoever reads a hosts file back (tests, the simulation's tools).
- :class:`HostsFile` (effectful): read, render and write under an exclusive lock, and only when
  the content changes (no write, unchanged mtime, when nothing changed: invariant F8; hazards
  and invariants are in docs/compatibility.md).

Why two write strategies: in a real pod ``/etc/hosts`` is a file the kubelet bind-mounts into
the container, so it cannot be replaced by renaming a temporary file over it (rename onto a
mount point fails with EBUSY, and would detach us from the kubelet's file if it did not). There
the only safe write is *in place*: lock the file itself (``flock``), write the complete new
buffer from offset 0 in one call, truncate to its length. A resolver that reads during that
window can see a mixture, which is unavoidable for a bind mount and is why the buffer is
written in one go. Everywhere else (the simulation gives each daemon its own ``HOSTS_FILE``)
the file is ours alone and we use the stronger temp-file + rename, serialised through a
sidecar lock file next to it. :func:`choose_in_place` picks: in place when the path is the
production default or a mount point (read from ``/proc/self/mountinfo``), rename otherwise.

Neither way fsyncs. Every process sees a write the moment it returns (nvidia-imex, resolving
through the file, included), and what the file holds is derived state: the daemon rewrites it
from the clique at every start, and the pod's file does not outlive a reboot. An fsync per
membership change (18 per daemon while a rack's clique forms) bought nothing but journal
commits on the node's disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from computedomain.api import names
from computedomain.runtime import files


def _hostnames(line: str) -> list[str]:
    """The host names of a hosts-file line (everything after the address, before a comment)."""
    fields = line.split("#", 1)[0].split()
    return fields[1:]


def is_managed_line(line: str, managed_names: frozenset[str]) -> bool:
    """Whether ``line`` is one we own: our header, a line naming a managed host, or (as
    upstream decides) any line containing the upstream name prefix. Pure."""
    stripped = line.strip()
    if stripped == names.HOSTS_HEADER or names.DNS_NAME_PREFIX in stripped:
        return True
    return any(name in managed_names for name in _hostnames(stripped))


def render(current: str, mapping: Mapping[str, str], managed_names: frozenset[str]) -> str:
    """The new hosts-file text: ``current`` minus managed lines, plus ``mapping`` (name → IP)
    in its order (one line per name: a mapping cannot hold a name twice).

    Pure and idempotent: ``render(render(t, m, n), m, n) == render(t, m, n)``. Lines that are
    kept are kept exactly (only a missing final newline is added). Every name of ``mapping``
    counts as managed, whatever ``managed_names`` says, so a name is never written twice.
    """
    managed = managed_names | frozenset(mapping)
    kept = [
        line if line.endswith("\n") else line + "\n"
        for line in current.splitlines(keepends=True)
        if not is_managed_line(line, managed)
    ]
    if not mapping:
        return "".join(kept)
    lines = [f"{names.HOSTS_HEADER}\n"]
    lines += [f"{ip}\t{name}\n" for name, ip in mapping.items()]
    return "".join(kept + lines)


def live_mapping(text: str, managed_names: frozenset[str] = frozenset()) -> dict[str, str]:
    """Name → IP of the managed lines of a hosts file (names in ``managed_names`` or with the
    name prefix), leaving out names mapped to the sentinel address; the first line naming a
    host wins, as for a resolver. Pure."""
    mapping: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if not fields or fields[0] == names.HOSTS_SENTINEL_IP:
            continue
        for host in fields[1:]:
            if host in managed_names or names.DNS_NAME_PREFIX in host:
                mapping.setdefault(host, fields[0])
    return mapping


def _mount_points(mountinfo: Path) -> set[str]:
    points: set[str] = set()
    with contextlib.suppress(OSError):
        for line in mountinfo.read_text().splitlines():
            fields = line.split()
            if len(fields) > 4:
                # mountinfo escapes space, tab, newline and backslash as octal (\040 ...).
                points.add(fields[4].encode().decode("unicode_escape"))
    return points


def choose_in_place(path: Path, *, mountinfo: Path = Path("/proc/self/mountinfo")) -> bool:
    """Whether ``path`` must be written in place: it is the production ``/etc/hosts`` or a
    mount point of its own (a bind-mounted file). Reads ``mountinfo``; never raises."""
    if str(path) == names.HOSTS_FILE:
        return True
    real = os.path.realpath(path)
    if mountinfo.exists():
        return real in _mount_points(mountinfo)
    return os.path.ismount(real)


@contextlib.contextmanager
def _locked(path: Path, *, make_parent: bool = False) -> Iterator[int]:
    """Hold ``flock`` on ``path`` (created if missing). With ``make_parent``, a missing
    directory is created, only when the open finds it missing (this runs on every update)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except FileNotFoundError:
        if not make_parent:
            raise
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def _read_fd(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode()


class HostsFile:
    """One hosts file and the way it must be written. Blocking: call through ``to_thread``."""

    def __init__(self, path: Path, *, in_place: bool) -> None:
        self.path = path
        self.in_place = in_place

    @property
    def _lock_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.lock")

    def read(self) -> str:
        """The current text ("" when the file does not exist)."""
        try:
            return self.path.read_text()
        except FileNotFoundError:
            return ""

    def update(self, transform: Callable[[str], str]) -> bool:
        """Apply ``transform`` to the current text under the lock; write only on change.

        Returns whether the file was written. Not idempotent by itself, but with a pure,
        idempotent ``transform`` (such as :func:`render`) a repeat is a no-op. Raises OSError.
        """
        if self.in_place:
            return self._update_in_place(transform)
        return self._update_by_rename(transform)

    def _update_in_place(self, transform: Callable[[str], str]) -> bool:
        with _locked(self.path) as fd:
            current = _read_fd(fd)
            new = transform(current)
            if new == current:
                return False
            data = new.encode()
            os.lseek(fd, 0, os.SEEK_SET)
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.ftruncate(fd, len(data))
            return True

    def _update_by_rename(self, transform: Callable[[str], str]) -> bool:
        with _locked(self._lock_path, make_parent=True):
            try:
                current: str | None = self.path.read_text()
            except FileNotFoundError:
                current = None  # written even when the new text is empty
            new = transform(current or "")
            if new == current:
                return False
            files.atomic_write(self.path, new.encode(), durable=False)
            return True
