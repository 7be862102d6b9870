"""Executables named ``nvidia-imex`` and ``nvidia-imex-ctl`` that run the stand-ins.

``computedomain sim imex-path`` calls :func:`ensure` and prints the directory; the simulation
(or a test) puts it first on the daemon's ``PATH``. The scripts call the current interpreter,
so they work from a virtual environment without installing anything on the system PATH. Each
interpreter and checkout gets its own directory (a hash of their paths), written atomically,
so concurrent callers never see a half-written script.

``nvidia-imex-ctl`` runs once per readiness probe, so its wrapper runs the stand-in's file
directly with ``-I -S`` (isolated, no ``site``): the stand-in imports only the standard library
(:mod:`.ctl`), and skipping the virtual environment's start-up and the package is most of its
cost. ``nvidia-imex`` starts once per daemon and runs as a module of the installed package.
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
# Stand-ins that are self-contained scripts (standard library only), run by path.
SCRIPTS = {names.IMEX_CTL_BINARY: Path(__file__).resolve().with_name("ctl.py")}


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


def standalone_script(path: Path, interpreter: str) -> str:
    """The wrapper text for the self-contained stand-in at ``path``: run in isolated mode
    without ``site`` (no environment variables, no user or virtual-environment packages).
    Pure."""
    quoted = f"{shlex.quote(interpreter)} -I -S {shlex.quote(str(path))}"
    return f'#!/bin/sh\nexec {quoted} "$@"\n'


def ensure(root: Path | None = None, interpreter: str | None = None) -> Path:
    """Create (or refresh) the wrapper directory and return it. Idempotent; raises OSError."""
    interpreter = interpreter or sys.executable
    # The wrappers name the interpreter and this checkout's stand-in files.
    digest = hashlib.sha256(f"{interpreter}\0{Path(__file__).parent}".encode()).hexdigest()[:12]
    directory = (root or default_root()) / f"imex-bin-{digest}"
    for binary, module in MODULES.items():
        path = directory / binary
        standalone = SCRIPTS.get(binary)
        if standalone is not None:
            text = standalone_script(standalone, interpreter)
        else:
            text = script(module, interpreter)
        if not path.exists() or path.read_text() != text:
            atomic_write(path, text.encode(), mode=0o755)
    return directory
