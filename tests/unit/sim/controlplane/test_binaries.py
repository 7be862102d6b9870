"""Finding the real control plane's programs: a folder named by the environment, or a clear
error that says how to build them."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain_sim.controlplane import binaries


def _programs(directory: Path, names: tuple[str, ...]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text("#!/bin/sh\n")
        (directory / name).chmod(0o755)


def test_the_named_folder_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _programs(tmp_path, binaries.PROGRAMS)
    monkeypatch.setenv(binaries.ENV_DIR, str(tmp_path))
    assert binaries.locate() == tmp_path


def test_a_missing_program_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _programs(tmp_path, binaries.PROGRAMS[:-1])
    monkeypatch.setenv(binaries.ENV_DIR, str(tmp_path))
    with pytest.raises(binaries.BinariesMissing, match=binaries.PROGRAMS[-1]):
        binaries.locate()


def test_without_a_build_the_error_says_how_to_make_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(binaries.ENV_DIR, raising=False)
    monkeypatch.setenv("COMPUTEDOMAIN_KUBE_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(binaries.BinariesMissing, match="make kube-bins"):
        binaries.locate()
