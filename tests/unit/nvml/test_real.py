"""The real backend's library loading and its smoke report, on the mock NVML library.

What it answers is compared with the fake backend in test_mock.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from computedomain.nvml import fake, smoke
from computedomain.nvml.real import RealNvml, locate_library
from computedomain.nvml.types import NvmlError
from tests.unit.nvml.conftest import Serve


def test_locate_library(tmp_path: Path) -> None:
    assert locate_library(tmp_path) is None
    libdir = tmp_path / "usr/lib/aarch64-linux-gnu"
    libdir.mkdir(parents=True)
    (libdir / "libnvidia-ml.so.570.158.01").write_bytes(b"")
    (libdir / "libnvidia-ml.so.1").symlink_to("libnvidia-ml.so.570.158.01")
    assert locate_library(tmp_path) == libdir / "libnvidia-ml.so.570.158.01"


def test_locate_library_skips_what_is_not_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "lib64/libnvidia-ml.so.1").mkdir(parents=True)  # a directory of that name
    (tmp_path / "usr/lib64").mkdir(parents=True)
    (tmp_path / "usr/lib64/libnvidia-ml.so.1").symlink_to("missing.so")  # a dangling link
    assert locate_library(tmp_path) is None
    libdir = tmp_path / "usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    (libdir / "libnvidia-ml.so.1").write_bytes(b"")
    assert locate_library(tmp_path) == libdir / "libnvidia-ml.so.1"


def test_unloadable_library_under_driver_root(tmp_path: Path, unloaded: None) -> None:
    (tmp_path / "lib64").mkdir()
    (tmp_path / "lib64/libnvidia-ml.so.1").write_bytes(b"not an ELF file")
    with pytest.raises(NvmlError, match="cannot load"):
        RealNvml(driver_root=tmp_path).driver_version()


def test_smoke_report_on_the_real_backend(
    serve: Serve, driver_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve(fake.document(fake.Profile.GB200))
    assert smoke.main(["--driver-root", str(driver_root)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["backend"] == "RealNvml"
    assert doc["driverVersion"] == "580.95.05"
    assert doc["deviceCount"] == 4
    assert doc["gpus"][0]["fabric"]["clusterUuid"] == fake.DEFAULT_CLIQUE.split(".")[0]
    assert doc["strict"] == {"cliqueID": fake.DEFAULT_CLIQUE}


def test_smoke_reports_errors_as_json(
    serve: Serve, driver_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve(attrs.evolve(fake.document(fake.Profile.GB200), init_return=9))
    assert smoke.main(["--driver-root", str(driver_root)]) == 1
    assert "nvmlInitWithFlags" in json.loads(capsys.readouterr().out)["error"]
    assert smoke.main(["--backend", "fake", "--fake-profile", "fabric-in-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "IN_PROGRESS" in doc["strict"]["error"]
    assert doc["legacy"] == {"cliqueID": ""}
