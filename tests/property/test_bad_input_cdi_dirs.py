"""Garbage in the CDI root — other vendors' specs, stray files, directories and symlinks, names
that look like ours but are not — and the plugin's cleanup of orphaned claim specs: it removes
only our orphaned claim specs, leaves everything else as it was (symlink targets included),
and never fails on what it finds."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.api import names, validation
from computedomain.api.errors import ConfigError
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin.cdistore import CdiStore
from computedomain.kubeletplugin.checkpointstore import CheckpointStore
from computedomain.kubeletplugin.cleanup import Cleanup
from computedomain.kubeletplugin.nodelock import NodeLock
from tests.faults import settings as suite

OURS = f"{names.CDI_VENDOR}-{names.CDI_CLASS_CLAIM}_"
KINDS = ("file", "dir", "link-file", "link-dir", "dangling")


@attrs.frozen
class Entry:
    name: str
    kind: str
    ours: bool  # a regular-file claim spec of ours with a well-formed UID
    known: bool = False  # its claim is in the checkpoint


def snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """name -> (type, content or link target), for everything in the CDI root."""
    found = {}
    for path in root.iterdir():
        if path.is_symlink():
            found[path.name] = ("link", os.readlink(path))
        elif path.is_dir():
            found[path.name] = ("dir", ",".join(sorted(p.name for p in path.iterdir())))
        else:
            found[path.name] = ("file", path.read_text(errors="replace"))
    return found


NAME_TEXT = st.text(
    st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
).filter(lambda s: s not in (".", ".."))


def is_ours(name: str, kind: str) -> bool:
    """Whether the plugin may treat an entry as one of its claim specs: our vendor and class,
    a UID that is a safe path component, a file or a symlink (the link is removed, never what
    it points to)."""
    if not (name.startswith(OURS) and name.endswith(".yaml")) or kind == "dir":
        return False
    try:
        validation.safe_path_component("uid", name[len(OURS) : -len(".yaml")])
    except ConfigError:
        return False
    return True


@st.composite
def entries(draw: st.DrawFn) -> list[Entry]:
    found: dict[str, Entry] = {}
    for _ in range(draw(st.integers(1, 8))):
        shape = draw(st.sampled_from(["ours", "ours-any", "base", "other"]))
        kind = draw(st.sampled_from(KINDS))
        if shape == "ours":
            uid = str(uuid.UUID(int=draw(st.integers(0, 2**128 - 1))))
            name = f"{OURS}{uid}.yaml"
        elif shape == "ours-any":
            name = f"{OURS}{draw(NAME_TEXT)}.yaml"
        elif shape == "base":
            name = names.CDI_BASE_SPEC_FILE
        else:
            name = draw(
                st.sampled_from(["nvidia.com-gpu.yaml", "k8s.gpu.nvidia.com-claim_x.yaml",
                                 "README", ".hidden", f"{OURS}.yaml", f"{OURS}"])
                | NAME_TEXT
            )  # fmt: skip
        if len(name.encode()) > 255 or name in found:
            continue
        ours = is_ours(name, kind)
        found[name] = Entry(name, kind, ours, known=ours and draw(st.booleans()))
    return list(found.values())


def make(root: Path, outside: Path, entry: Entry) -> None:
    path = root / entry.name
    target_file = outside / f"target-{uuid.uuid4().hex[:6]}"
    if entry.kind == "file":
        path.write_text(f"content of {entry.name}")
    elif entry.kind == "dir":
        path.mkdir()
        (path / "inside").write_text("x")
    elif entry.kind == "link-file":
        target_file.write_text("target")
        path.symlink_to(target_file)
    elif entry.kind == "link-dir":
        target_file.mkdir()
        (target_file / "inside").write_text("x")
        path.symlink_to(target_file)
    else:
        path.symlink_to(outside / "nowhere")


@pytest.fixture
def place() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cdi-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def cleanup_for(place: Path, known: set[str]) -> Cleanup:
    store = CheckpointStore(place / "checkpoint.json")
    entry = cp.ClaimEntry(cp.ClaimState.PREPARE_COMPLETED, "ns", "c", 1.0)
    store.write(cp.Checkpoint(boot_id="b", claims=dict.fromkeys(known, entry)))
    return Cleanup(
        state=None,  # type: ignore[arg-type]  # the orphan step needs no claim state
        lock=NodeLock(place / "lock"),
        checkpoints=store,
        cdi=CdiStore(place / "cdi"),
        cluster=None,  # type: ignore[arg-type]
        domains_root=place / "domains",
        lookup=None,  # type: ignore[arg-type]
    )


@settings(
    max_examples=suite.examples(60, 600),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(found=entries())
def test_cleanup_removes_only_our_orphans_and_never_fails(place: Path, found: list[Entry]) -> None:
    for leftover in place.iterdir():
        shutil.rmtree(
            leftover
        ) if leftover.is_dir() and not leftover.is_symlink() else leftover.unlink()
    root, outside = place / "cdi", place / "outside"
    root.mkdir()
    outside.mkdir()
    for entry in found:
        make(root, outside, entry)
    known = {e.name[len(OURS) : -len(".yaml")] for e in found if e.known}
    before = snapshot(root)
    outside_before = snapshot(outside)
    removed = asyncio.run(cleanup_for(place, known).orphaned_specs())  # raises nothing
    after = snapshot(root)
    orphans = {e.name for e in found if e.ours and not e.known}
    assert set(after) == set(before) - orphans, (sorted(set(before) - set(after)), orphans)
    for name, state in after.items():
        assert before[name] == state
    assert sorted(removed) == sorted(n[len(OURS) : -len(".yaml")] for n in orphans)
    assert snapshot(outside) == outside_before  # no symlink was followed


def orphan_cleanup_with(place: Path, odd: Entry) -> tuple[list[str], set[str]]:
    """An orphaned spec of ours beside ``odd``; the cleanup's result and what is left."""
    root = place / "cdi"
    root.mkdir()
    orphan = f"{OURS}{uuid.uuid4()}.yaml"
    (root / orphan).write_text("orphan")
    make(root, place, odd)
    removed = asyncio.run(cleanup_for(place, set()).orphaned_specs())
    return removed, {p.name for p in root.iterdir()}


def test_a_name_with_an_unsafe_uid_does_not_stop_the_orphan_cleanup(place: Path) -> None:
    removed, left = orphan_cleanup_with(place, Entry(f"{OURS}a:b.yaml", "file", ours=False))
    assert len(removed) == 1
    assert left == {f"{OURS}a:b.yaml"}


def test_a_directory_named_like_a_spec_does_not_stop_the_orphan_cleanup(place: Path) -> None:
    name = f"{OURS}{uuid.uuid4()}.yaml"
    removed, left = orphan_cleanup_with(place, Entry(name, "dir", ours=False))
    assert len(removed) == 1
    assert left == {name}
