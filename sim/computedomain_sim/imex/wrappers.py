"""Executables named ``nvidia-imex`` and ``nvidia-imex-ctl`` that run the stand-ins.

``computedomain sim imex-path`` calls :func:`ensure` and prints the directory; the simulation
(or a test) puts it first on the daemon's ``PATH``. The scripts call the current interpreter,
so they work from a virtual environment without installing anything on the system PATH. Each
interpreter and checkout gets its own directory (a hash of their paths), written atomically,
so concurrent callers never see a half-written script.

``nvidia-imex-ctl`` runs once per readiness probe, so where bash is installed its executable is
the bash stand-in (``ctl.bash``, the same tool as :mod:`.ctl`: a bash start costs a fraction of
a Python one, as the real tool, a small C program, does), and elsewhere its wrapper runs the
Python stand-in's file directly with ``-I -S`` (isolated, no ``site``): that stand-in imports
only the standard library, and skipping the virtual environment's start-up and the package is
most of its cost. ``nvidia-imex`` starts once per daemon and runs as a module of the installed
package.

The directory also holds a ``chroot`` stand-in (a real chroot needs root and a whole file
system under the new root): ``chroot ROOT TOOL ARGS...`` runs ``ROOT/TOOL`` with
``SIM_CHROOT=ROOT``, under which the ``nvidia-imex-ctl`` stand-in resolves its socket path.
The kubelet plugin calls it to ask a simulated host's ``nvidia-imex`` (:mod:`.host`).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
from pathlib import Path

from computedomain.api import names
from computedomain.daemon.files import atomic_write

MODULES = {
    names.IMEX_BINARY: "computedomain_sim.imex.daemon",
    names.IMEX_CTL_BINARY: "computedomain_sim.imex.ctl",
}
# Stand-ins that are self-contained scripts (standard library only), run by path.
SCRIPTS = {names.IMEX_CTL_BINARY: Path(__file__).resolve().with_name("ctl.py")}
# The same tools in bash, used where bash is installed (a bash start costs a fraction of a
# Python one; they run once per readiness probe).
BASH_SCRIPTS = {names.IMEX_CTL_BINARY: Path(__file__).resolve().with_name("ctl.bash")}


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


def bash_script(path: Path, bash: str) -> str:
    """The stand-in at ``path`` (a bash script without a ``#!`` line) as an executable run by
    ``bash``. Pure apart from reading ``path``."""
    return f"#!{bash}\n{path.read_text()}"


CHROOT_SCRIPT = (
    "#!/bin/sh\n"
    "# The simulation's chroot: run ROOT/TOOL with SIM_CHROOT=ROOT (see wrappers.py).\n"
    'if [ $# -lt 2 ]; then echo "usage: chroot ROOT TOOL [ARGS...]" >&2; exit 125; fi\n'
    "root=$1; tool=$2; shift 2\n"
    'SIM_CHROOT=$root exec "$root$tool" "$@"\n'
)


def ensure(
    root: Path | None = None, interpreter: str | None = None, *, bash: str | None = None
) -> Path:
    """Create (or refresh) the wrapper directory and return it. Idempotent; raises OSError.

    ``bash``: the bash to run the bash stand-ins with (default: the one on PATH; ``""``: none,
    use the Python ones).
    """
    interpreter = interpreter or sys.executable
    if bash is None:
        bash = shutil.which("bash") or ""
    # The wrappers name the interpreter, the bash and this checkout's stand-in files.
    key = f"{interpreter}\0{bash}\0{Path(__file__).parent}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    directory = (root or default_root()) / f"imex-bin-{digest}"
    for binary, module in MODULES.items():
        path = directory / binary
        standalone = SCRIPTS.get(binary)
        in_bash = BASH_SCRIPTS.get(binary)
        if in_bash is not None and bash:
            text = bash_script(in_bash, bash)
        elif standalone is not None:
            text = standalone_script(standalone, interpreter)
        else:
            text = script(module, interpreter)
        if not path.exists() or path.read_text() != text:
            atomic_write(path, text.encode(), mode=0o755)
    chroot = directory / "chroot"
    if not chroot.exists() or chroot.read_text() != CHROOT_SCRIPT:
        atomic_write(chroot, CHROOT_SCRIPT.encode(), mode=0o755)
    return directory
