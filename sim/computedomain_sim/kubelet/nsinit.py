"""Container init for ``mountns`` isolation: build the container's file tree, then exec.

Run by :mod:`.runtime` as ``unshare --mount --propagation private python -I -S
.../nsinit.py SPEC.json`` (root only): a script that imports only the standard library, so it
starts without ``site`` or the package. Inside the fresh private mount
namespace it mounts a tmpfs as the new root, mirrors the host's root into it (each top-level
entry bind-mounted, symlinks copied), and makes each mount of the spec at its target. Where a
target's parent directory does not exist, the nearest existing ancestor is itself replaced by a
tmpfs mirror of the host directory, so creating the mount point never writes to the host. Then
it chroots into the new root, changes to the working directory and execs the container's
program with its environment. All mounts vanish with the namespace when the process exits.

``--probe DIR`` checks that this works on the machine (used once by :mod:`.isolation`).
Exit codes: 126 when the tree cannot be built, 127 when the program is not found.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path
from typing import Any

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MNT_DETACH = 2
EXIT_SETUP = 126
EXIT_NOT_FOUND = 127

# The interpreter's own symbols include libc's (glibc and musl alike): no library search, which
# would run ``ldconfig -p`` in every container start.
_libc = ctypes.CDLL(None, use_errno=True)


class _Tree:
    """The new root under construction; ``owned`` holds the container paths that are tmpfs
    mirrors or directories made in one (safe to create entries in)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.owned: set[str] = set()

    def real(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def synthesize(self, path: str) -> None:
        """Turn ``path`` (a directory) into a tmpfs mirror of the host's ``path``."""
        if path in self.owned:
            return
        if path != "/":
            self.synthesize(os.path.dirname(path))
            _umount(self.real(path))
        _mount("tmpfs", self.real(path), "tmpfs", 0, "mode=755")
        for entry in os.scandir(path):
            self._mirror(entry)
        self.owned.add(path)

    def _mirror(self, entry: os.DirEntry[str]) -> None:
        target = self.real(entry.path)
        if entry.is_symlink():
            target.symlink_to(os.readlink(entry.path))
        elif entry.is_dir():
            target.mkdir()
            _mount(entry.path, target, None, MS_BIND | MS_REC, None)
        else:
            target.touch()
            _mount(entry.path, target, None, MS_BIND, None)

    def resolve(self, path: str) -> str:
        """``path`` with symlinks resolved as the container will see them (inside the new
        root), so ``/var/run/cdi`` becomes ``/run/cdi`` where ``/var/run`` links to ``/run``."""
        done = "/"
        pending = [p for p in path.split("/") if p]
        hops = 0
        while pending:
            part = pending.pop(0)
            candidate = os.path.normpath(os.path.join(done, part))
            real = self.real(candidate)
            if os.path.islink(real) and hops < 40:
                hops += 1
                link = os.readlink(real)
                pending = [p for p in link.split("/") if p] + pending
                if link.startswith("/"):
                    done = "/"
                continue
            done = candidate
        return done

    def place(self, source: str, target: str, read_only: bool) -> None:
        """Bind ``source`` at ``target``, creating the mount point inside a mirror."""
        target = self.resolve(target)
        real = self.real(target)
        if not os.path.lexists(real):
            ancestor = os.path.dirname(target)
            while not os.path.isdir(self.real(ancestor)):
                ancestor = os.path.dirname(ancestor)
            self.synthesize(ancestor)
            missing = os.path.dirname(target)
            while missing not in self.owned and missing != ancestor:
                self.owned.add(missing)
                missing = os.path.dirname(missing)
            real.parent.mkdir(parents=True, exist_ok=True)
            if os.path.isdir(source):
                real.mkdir()
            else:
                real.touch()
        _mount(source, real, None, MS_BIND | MS_REC, None)
        if read_only:
            _mount("none", real, None, MS_BIND | MS_REMOUNT | MS_RDONLY, None)


def _mount(
    source: str | Path, target: Path, fstype: str | None, flags: int, data: str | None
) -> None:
    result = _libc.mount(
        str(source).encode(),
        str(target).encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    if result != 0:
        errno = ctypes.get_errno()
        msg = f"mount {source} on {target} ({fstype or 'bind'}): {os.strerror(errno)}"
        raise OSError(errno, msg)


def _umount(target: Path) -> None:
    if _libc.umount2(str(target).encode(), MNT_DETACH) != 0:
        errno = ctypes.get_errno()
        msg = f"umount {target}: {os.strerror(errno)}"
        raise OSError(errno, msg)


def build_root(scratch: Path, mounts: list[dict[str, Any]]) -> Path:
    """Build the container's root under ``scratch`` (an existing empty directory)."""
    tree = _Tree(scratch)
    tree.synthesize("/")
    for mount in sorted(mounts, key=lambda m: m["target"].count("/")):
        tree.place(mount["source"], mount["target"], bool(mount.get("readOnly")))
    return scratch


def _run(spec_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    scratch = Path(spec["scratch"])
    try:
        root = build_root(scratch, spec["mounts"])
        os.chroot(root)
        os.chdir(spec["cwd"] if os.path.isdir(spec["cwd"]) else "/")
    except OSError as exc:
        print(f"container init: {exc}", file=sys.stderr)
        return EXIT_SETUP
    argv = spec["argv"]
    try:
        os.execvpe(argv[0], argv, spec["env"])
    except OSError as exc:
        print(f"container init: exec {argv[0]}: {exc.strerror}", file=sys.stderr)
        return EXIT_NOT_FOUND


def _probe(directory: Path) -> int:
    """Build a root with one bind mount at a path the host does not have, and read it back."""
    source = directory / "source"
    source.mkdir(exist_ok=True)
    (source / "marker").write_text("ok")
    scratch = directory / "root"
    scratch.mkdir(exist_ok=True)
    try:
        root = build_root(scratch, [{"source": str(source), "target": "/cd-sim-probe/dir"}])
        os.chroot(root)
        return 0 if Path("/cd-sim-probe/dir/marker").read_text() == "ok" else EXIT_SETUP
    except OSError as exc:
        print(f"container init probe: {exc}", file=sys.stderr)
        return EXIT_SETUP


def main(argv: list[str] | None = None) -> int:
    """``nsinit SPEC.json`` or ``nsinit --probe DIR``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--probe":
        return _probe(Path(args[1]))
    if len(args) != 1:
        print("usage: nsinit SPEC.json | nsinit --probe DIR", file=sys.stderr)
        return 2
    return _run(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())
