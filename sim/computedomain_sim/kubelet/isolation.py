"""Choose how simulated containers see their mounts, once per process, and wrap commands for it.

Called by :mod:`.runtime` (to start a container and run exec probes) and reported by
``computedomain sim status``. Effectful only in :func:`detect` (runs one probe process).

Two modes, the same manifests for both (see :mod:`.launch`):

- ``mountns``: each container runs in a private mount namespace (``unshare --mount``) whose root
  mirrors the host's, with its volumes, CDI mounts, device placeholders and a private
  ``/etc/hosts`` at their container paths. Needs root (CAP_SYS_ADMIN), ``unshare`` and
  ``nsenter`` (util-linux), tmpfs and bind mounts. Exec probes enter the container's namespace
  and root with ``nsenter``.
- ``pathmap``: no namespaces; paths in the environment and arguments are rewritten to the real
  directories, and well-known path variables tell programs where their files are.

``detect`` honours ``CD_SIM_ISOLATION=mountns|pathmap`` (a request for ``mountns`` on a machine
that cannot do it is an error), and otherwise picks ``mountns`` when the probe succeeds.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .launch import Isolation

__all__ = ["IsolationError", "container_argv", "detect", "exec_argv", "mountns_available"]

ENV_OVERRIDE = "CD_SIM_ISOLATION"


class IsolationError(RuntimeError):
    """The requested isolation mode is not available on this machine; says why."""


def detect() -> Isolation:
    """The mode to use (cached for the process). Raises :class:`IsolationError` when
    ``CD_SIM_ISOLATION`` asks for a mode that is unknown or unavailable."""
    wanted = os.environ.get(ENV_OVERRIDE, "").strip()
    if wanted:
        try:
            mode = Isolation(wanted)
        except ValueError as exc:
            msg = f"{ENV_OVERRIDE}={wanted!r}: expected mountns or pathmap"
            raise IsolationError(msg) from exc
        if mode is Isolation.MOUNTNS:
            available, why = mountns_available()
            if not available:
                msg = f"{ENV_OVERRIDE}=mountns, but private mount namespaces fail here: {why}"
                raise IsolationError(msg)
        return mode
    return Isolation.MOUNTNS if mountns_available()[0] else Isolation.PATHMAP


@functools.cache
def mountns_available() -> tuple[bool, str]:
    """Whether ``mountns`` works here, and if not why. Runs the probe once per process."""
    if os.geteuid() != 0:
        return False, "not running as root"
    for tool in ("unshare", "nsenter"):
        if shutil.which(tool) is None:
            return False, f"{tool} (util-linux) is not installed"
    with tempfile.TemporaryDirectory(prefix="cd-sim-probe-") as scratch:
        try:
            result = subprocess.run(
                [*_unshare(), "--probe", scratch],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, str(exc)
    if result.returncode != 0:
        return False, result.stderr.strip() or f"probe exited {result.returncode}"
    return True, ""


def container_argv(mode: Isolation, spec_file: Path, argv: Sequence[str]) -> list[str]:
    """The command that starts a container: through the namespace init, or ``argv`` itself."""
    if mode is Isolation.MOUNTNS:
        return [*_unshare(), str(spec_file)]
    return list(argv)


def exec_argv(mode: Isolation, pid: int, argv: Sequence[str]) -> list[str]:
    """The command that runs ``argv`` inside the running container ``pid`` (exec probes)."""
    if mode is Isolation.MOUNTNS:
        return ["nsenter", f"--target={pid}", "--mount", "--root", "--wd", "--", *argv]
    return list(argv)


# The container init is a standard-library script, run by path without ``site`` (``-I -S``):
# it starts once per container, and the virtual environment's start-up and the package's
# import were most of its cost.
NSINIT = Path(__file__).resolve().with_name("nsinit.py")


def _unshare() -> list[str]:
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        sys.executable,
        "-I",
        "-S",
        str(NSINIT),
    ]
