"""Facts about the repository that the packaging tests compare against (read, never written).

Used by the Containerfile and launcher tests here and by the fresh-install test in
``tests/integration/plugins``: the project metadata in ``pyproject.toml``, the pins in
``constraints.txt``, the ``bin/`` launchers and the example plugin folders.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / "bin"
PLUGINS = ROOT / "plugins"

# upstream's program name in its image -> our launcher it runs
ALIASES = {
    "compute-domain-controller": "cd-controller",
    "compute-domain-kubelet-plugin": "cd-kubelet-plugin",
    "compute-domain-daemon": "cd-imex-daemon",
}


@cache
def pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def version() -> str:
    return str(pyproject()["project"]["version"])


def scripts() -> dict[str, str]:
    """Console script name -> ``module:function``."""
    return dict(pyproject()["project"]["scripts"])


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def constraints() -> dict[str, str]:
    """Canonical distribution name -> pinned version, from ``constraints.txt``."""
    pins: dict[str, str] = {}
    for raw in (ROOT / "constraints.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, pinned = line.partition("==")
            pins[canonical(name)] = pinned.strip()
    return pins


def plugin_dirs() -> list[Path]:
    return sorted(p.parent for p in PLUGINS.glob("*/pyproject.toml"))


def module_exists(target: str) -> bool:
    """Whether the module of a ``module:function`` target is in this source tree."""
    module = target.partition(":")[0]
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def repository_files() -> list[str]:
    """Paths (relative, ``/``-separated) of the files git tracks or would track here."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in out.splitlines() if line and (ROOT / line).is_file()]
