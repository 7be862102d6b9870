"""Executables named ``nvidia-imex`` and ``nvidia-imex-ctl`` that run the stand-ins.

``computedomain sim imex-path`` calls :func:`ensure` and prints the directory; the simulation
(or a test) puts it first on the daemon's ``PATH``. The scripts call the current interpreter,
so they work from a virtual environment without installing anything on the system PATH. Each
interpreter gets its own directory (a hash of its path), written atomically, so concurrent
callers never see a half-written script.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from pathlib import Path

from computedomain.api import names
from computedomain.daemon.files import atomic_write

MODULES = {
    names.IMEX_BINARY: "computedomain.sim.imex.daemon",
    names.IMEX_CTL_BINARY: "computedomain.sim.imex.ctl",
}


def default_root() -> Path:
    """``$XDG_CACHE_HOME/computedomain`` (``~/.cache/computedomain`` when unset)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "computedomain"


def script(module: str, interpreter: str) -> str:
    """The wrapper text for ``module``. Pure.

    SIGUSR1 is ignored across the ``exec`` until the stand-in installs its own handler, so a
    reload signal during interpreter start-up cannot kill it (the real binary starts in
    milliseconds; Python needs a few hundred).
    """
    return f'#!/bin/sh\ntrap "" USR1\nexec {shlex.quote(interpreter)} -m {module} "$@"\n'


def ensure(root: Path | None = None, interpreter: str | None = None) -> Path:
    """Create (or refresh) the wrapper directory and return it. Idempotent; raises OSError."""
    interpreter = interpreter or sys.executable
    digest = hashlib.sha256(interpreter.encode()).hexdigest()[:12]
    directory = (root or default_root()) / f"imex-bin-{digest}"
    for binary, module in MODULES.items():
        path = directory / binary
        text = script(module, interpreter)
        if not path.exists() or path.read_text() != text:
            atomic_write(path, text.encode(), mode=0o755)
    return directory
