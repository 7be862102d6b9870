"""Atomic writes leave either the old or the new file; corrupt files are moved aside."""

from __future__ import annotations

import itertools
import os
import stat
from pathlib import Path

import pytest

from computedomain.runtime import files


def test_atomic_write_replaces_content_and_sets_mode(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint.json"
    target.write_bytes(b"old")
    files.atomic_write(target, b"new contents", mode=0o600)
    assert target.read_bytes() == b"new contents"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["checkpoint.json"]  # no temp file left behind


def test_a_failed_write_keeps_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "hosts"
    target.write_bytes(b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        files.atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["hosts"]


def test_temp_file_is_written_in_the_target_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append((os.path.dirname(src), os.path.basename(src)))
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", spy)
    files.atomic_write(tmp_path / "x.cfg", b"1")
    assert seen[0][0] == str(tmp_path)
    assert seen[0][1].startswith(".x.cfg.")


def test_a_leftover_temp_file_is_skipped_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temp name already taken (a crashed writer's leftover, or a writer with the same PID
    in another PID namespace) is left alone and the next one is used."""
    monkeypatch.setattr(files, "_temp_numbers", itertools.count(7))
    leftover = tmp_path / f".x.cfg.{os.getpid()}.7.tmp"
    leftover.write_bytes(b"someone else's")
    files.atomic_write(tmp_path / "x.cfg", b"mine")
    assert (tmp_path / "x.cfg").read_bytes() == b"mine"
    assert leftover.read_bytes() == b"someone else's"
    assert sorted(os.listdir(tmp_path)) == [leftover.name, "x.cfg"]


@pytest.mark.parametrize(("durable", "fsyncs"), [(True, 2), (False, 0)], ids=["durable", "not"])
def test_durable_writes_fsync_the_file_and_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool, fsyncs: int
) -> None:
    calls: list[int] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", spy)
    target = tmp_path / "checkpoint.json"
    target.write_bytes(b"old")
    files.atomic_write(target, b"new", mode=0o600, durable=durable)
    assert len(calls) == fsyncs
    # Either way the write is atomic: the new content under the old name, mode set, no temp.
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["checkpoint.json"]


def test_missing_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        files.atomic_write(tmp_path / "nope" / "x", b"1")


def test_move_aside_keeps_the_bad_file_under_a_new_name(tmp_path: Path) -> None:
    bad = tmp_path / "checkpoint.json"
    bad.write_bytes(b"{not json")
    first = files.move_aside(bad, "invalid JSON")
    bad.write_bytes(b"again")
    second = files.move_aside(bad, "invalid JSON")
    assert not bad.exists()
    assert first != second
    assert first.name.startswith("checkpoint.json.corrupt-")
    assert first.read_bytes() == b"{not json"
    assert second.read_bytes() == b"again"


async def test_async_adapters(tmp_path: Path) -> None:
    target = tmp_path / "d" / "f"
    await files.make_dirs(target.parent)
    assert await files.read_optional(target) is None
    await files.write_atomic(target, b"x")
    assert await files.read_optional(target) == b"x"
    moved = await files.set_aside(target, "test")
    assert moved.exists()
    assert not await files.remove(target)
    assert await files.remove(moved)
