"""The mock ``libnvidia-ml.so.1`` for the real backend's tests: built once, loaded in-process.

``on_mock`` puts the library under a driver root, points pynvml at nothing (so the backend loads
the library from that root, as in production) and selects a profile with ``NVML_MOCK_PROFILE``,
which the library reads at each first ``nvmlInit``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pynvml
import pytest

from computedomain.nvml import hardware
from computedomain.nvml.real import RealNvml
from computedomain_sim import nvmlmock


@pytest.fixture(scope="session")
def mock_library() -> Path:
    """The built library (``make nvml-mock``: up to date in milliseconds when nothing changed)."""
    return nvmlmock.build()


@pytest.fixture
def driver_root(tmp_path: Path, mock_library: Path) -> Path:
    """A container driver root with the mock library where the real backend looks first."""
    root = tmp_path / "driver-root"
    nvmlmock.install(root, mock_library)
    return root


@pytest.fixture
def unloaded() -> Iterator[None]:
    """pynvml with no library loaded, restored afterwards."""
    saved = pynvml.nvmlLib
    pynvml.nvmlLib = None
    pynvml._nvmlGetFunctionPointer_cache.clear()
    yield
    pynvml.nvmlLib = saved
    pynvml._nvmlGetFunctionPointer_cache.clear()


Serve = Callable[[hardware.Document], RealNvml]


@pytest.fixture
def serve(
    driver_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unloaded: None
) -> Serve:
    """``serve(document)``: the real backend on the mock library serving that document."""

    def start(doc: hardware.Document) -> RealNvml:
        path = tmp_path / "profile.json"
        path.write_text(hardware.dumps(doc))
        monkeypatch.setenv("NVML_MOCK_PROFILE", str(path))
        return RealNvml(driver_root=driver_root)

    return start
