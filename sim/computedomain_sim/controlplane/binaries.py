"""Where the real control plane's programs are: the per-version cache that ``make kube-bins``
fills (``sim/controlplane/build.sh`` builds them from the versions its go.mod pins and prints
the folder), or the folder ``COMPUTEDOMAIN_KUBE_BIN_DIR`` names.

Called by :mod:`computedomain_sim.cluster.cluster` before it starts a ``--control-plane kube``
cluster, so that a missing build is one clear error naming the command that makes it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["PROGRAMS", "BinariesMissing", "locate"]

PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
ENV_DIR = "COMPUTEDOMAIN_KUBE_BIN_DIR"
# The checkout's Go module (absent from an installed wheel).
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "controlplane" / "build.sh"


class BinariesMissing(RuntimeError):
    """The control plane's programs are not built; the message says how to build them."""


def locate() -> Path:
    """The folder holding every program of :data:`PROGRAMS`. Raises :class:`BinariesMissing`."""
    named = os.environ.get(ENV_DIR)
    if named:
        directory = Path(named)
    elif BUILD_SCRIPT.is_file():
        answer = subprocess.run(
            [str(BUILD_SCRIPT), "--print-dir"], capture_output=True, text=True, check=False
        )
        if answer.returncode != 0:
            msg = f"{BUILD_SCRIPT} --print-dir failed: {answer.stderr.strip()}"
            raise BinariesMissing(msg)
        directory = Path(answer.stdout.strip())
    else:
        msg = f"no real control plane: set {ENV_DIR} to a folder holding {', '.join(PROGRAMS)}"
        raise BinariesMissing(msg)
    missing = [p for p in PROGRAMS if not os.access(directory / p, os.X_OK)]
    if missing:
        how = f"set {ENV_DIR}" if named else "run `make kube-bins` (the first build takes long)"
        msg = f"{', '.join(missing)} not found in {directory}: {how}"
        raise BinariesMissing(msg)
    return directory
