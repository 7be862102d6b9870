"""Atomic swaps of two paths, and the rename fallback of non-durable atomic writes."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from computedomain.runtime import exchange, files


def _swap_supported(tmp_path: Path) -> bool:
    a, b = tmp_path / "probe-a", tmp_path / "probe-b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    try:
        return exchange.swap(a, b)
    finally:
        a.unlink()
        b.unlink()


def test_swap_exchanges_two_regular_files(tmp_path: Path) -> None:
    if not _swap_supported(tmp_path):
        pytest.skip("no RENAME_EXCHANGE on this kernel, C library or filesystem")
    new, target = tmp_path / "new", tmp_path / "target"
    new.write_bytes(b"new")
    target.write_bytes(b"old")
    inode = new.stat().st_ino
    assert exchange.swap(new, target)
    assert target.read_bytes() == b"new"
    assert target.stat().st_ino == inode  # the very file, not a copy
    assert new.read_bytes() == b"old"


@pytest.mark.parametrize("kind", ["missing", "directory", "symlink"])
def test_swap_declines_a_target_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    new, target = tmp_path / "new", tmp_path / "target"
    new.write_bytes(b"new")
    if kind == "directory":
        target.mkdir()
    elif kind == "symlink":
        (tmp_path / "elsewhere").write_bytes(b"x")
        target.symlink_to(tmp_path / "elsewhere")
    assert not exchange.swap(new, target)
    assert new.read_bytes() == b"new"  # nothing moved


def _failing_renameat2(code: int) -> Callable[[bytes, bytes], int]:
    return lambda _source, _target: code


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOSYS, errno.EXDEV])
def test_an_unsupported_swap_falls_back_to_a_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    monkeypatch.setattr(exchange, "_renameat2", lambda: _failing_renameat2(code))
    target = tmp_path / "checkpoint.json"
    target.write_bytes(b"old")
    files.atomic_write(target, b"new", mode=0o600, durable=False)
    assert target.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["checkpoint.json"]


def test_no_renameat2_in_the_c_library_falls_back_to_a_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exchange, "_renameat2", lambda: None)
    target = tmp_path / "spec.yaml"
    target.write_bytes(b"old")
    files.atomic_write(target, b"new", durable=False)
    assert target.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["spec.yaml"]


def test_another_swap_error_is_raised_and_the_target_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exchange, "_renameat2", lambda: _failing_renameat2(errno.EIO))
    target = tmp_path / "checkpoint.json"
    target.write_bytes(b"old")
    with pytest.raises(OSError, match="Input/output error"):
        files.atomic_write(target, b"new", durable=False)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["checkpoint.json"]  # no temporary file left


def test_a_non_durable_write_swaps_and_leaves_no_old_content(tmp_path: Path) -> None:
    if not _swap_supported(tmp_path):
        pytest.skip("no RENAME_EXCHANGE on this kernel, C library or filesystem")
    target = tmp_path / "checkpoint.json"
    for content in (b"first", b"second", b"third"):
        files.atomic_write(target, content, mode=0o600, durable=False)
    assert target.read_bytes() == b"third"
    assert os.listdir(tmp_path) == ["checkpoint.json"]
