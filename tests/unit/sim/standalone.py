"""What a standard-library script of the simulation loads when run as its wrapper runs it.

The simulation starts some scripts once per probe or per container (the ``nvidia-imex-ctl``
stand-in, the container init), so what they import is their cost; their tests run them with
``python -I -S`` and list the modules they loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def modules_loaded(script: Path, argv: Sequence[str], roots: Sequence[str]) -> list[str]:
    """Run ``script`` with ``argv`` under ``python -I -S`` and return the loaded modules whose
    top-level package is one of ``roots`` (sorted). A SystemExit of the script is expected."""
    code = (
        f"import runpy, sys, json; sys.argv = {list(argv)!r}\n"
        f"try:\n    runpy.run_path({str(script)!r}, run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {tuple(roots)!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded: list[str] = json.loads(result.stdout.splitlines()[-1])
    return loaded
