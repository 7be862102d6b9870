"""The mock NVML library on simulated nodes: building it and laying it out on a node.

With ``--nvml-backend real`` a simulated node runs the plugin's production (real) NVML backend
against the mock ``libnvidia-ml.so.1`` (C sources in ``computedomain/nvml/mock``, see
docs/nvml-mock.md) instead of the fake backend: the library is linked into the node's driver
root where the real backend looks for it, and the node's profile document (the fake backend's
profile on the node's rack clique) is written beside it and named by ``NVML_MOCK_PROFILE``.
The tests of the real backend and ``bench/prepare.py`` use the same pieces. The library is built
from the source checkout with ``make nvml-mock`` (incremental: milliseconds when up to date).
"""

from __future__ import annotations

import enum
import subprocess
from pathlib import Path
from typing import Final

from computedomain.nvml import fake, hardware
from computedomain.runtime import files

__all__ = [
    "LIBRARY_NODE_PATH",
    "PROFILE_NODE_PATH",
    "MockBuildError",
    "NvmlBackend",
    "build",
    "install",
    "link",
    "profile_text",
    "write_profile",
]

REPO: Final = Path(__file__).resolve().parents[2]
LIBRARY: Final = REPO / "build" / "nvml-mock" / "libnvidia-ml.so.1"
# Node paths: the first directory the real backend searches under its driver root, and the
# profile beside the library.
LIBRARY_NODE_PATH: Final = "/usr/lib64/libnvidia-ml.so.1"
PROFILE_NODE_PATH: Final = "/usr/lib64/nvml-mock-profile.json"


class NvmlBackend(enum.StrEnum):
    """``--nvml-backend`` of the simulation: what NVML the simulated nodes' plugins use."""

    FAKE = "fake"  # the Python fake backend (NVML_BACKEND=fake)
    REAL = "real"  # the production backend on the mock library


class MockBuildError(RuntimeError):
    """The library could not be built; the message carries make's output."""


def build() -> Path:
    """Bring the library up to date and return its path. Raises MockBuildError."""
    if not (REPO / "Makefile").is_file():
        msg = f"the mock NVML library is built from a source checkout; no Makefile in {REPO}"
        raise MockBuildError(msg)
    try:
        done = subprocess.run(
            ["make", "-s", "-C", str(REPO), "nvml-mock"],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        msg = "building the mock NVML library needs make and a C compiler (gcc)"
        raise MockBuildError(msg) from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        msg = f"make nvml-mock failed (exit {done.returncode}): {output}"
        raise MockBuildError(msg)
    return LIBRARY


def link(path: Path, source: Path) -> Path:
    """Make ``path`` a symbolic link to ``source``, atomically (parents created); returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(f".{path.name}.new")
    staged.unlink(missing_ok=True)
    staged.symlink_to(source)
    staged.replace(path)
    return path


def install(driver_root: Path, library: Path = LIBRARY) -> Path:
    """Link ``library`` where the real backend looks first under ``driver_root``."""
    return link(driver_root / LIBRARY_NODE_PATH.lstrip("/"), library)


def profile_text(profile: str, clique: str) -> str:
    """The profile document of a node of ``clique``. Raises ConfigError (unknown profile)."""
    return hardware.dumps(fake.document(fake.parse_profile(profile), clique))


def write_profile(path: Path, profile: str, clique: str) -> Path:
    """Write :func:`profile_text` to ``path`` atomically; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.atomic_write(path, profile_text(profile, clique).encode())
    return path
