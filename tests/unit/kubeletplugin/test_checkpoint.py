"""The checkpoint format (round trip, checksum, corruption) and the store's startup rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin.checkpointstore import CheckpointStore, Startup, read_boot_id

ids = st.text(alphabet="abcdef0123456789-", min_size=1, max_size=12)
devices = st.builds(
    cp.PreparedDevice,
    device=st.sampled_from(["channel-0", "daemon-0"]),
    pool=ids,
    requests=st.lists(ids, max_size=2).map(tuple),
    type=st.sampled_from(list(cp.DeviceType)),
    domain_id=ids,
    admin_access=st.booleans(),
    cdi_device_ids=st.lists(ids, max_size=2).map(tuple),
    channels=st.lists(st.integers(0, 2047), max_size=3).map(tuple),
)
entries = st.builds(
    cp.ClaimEntry,
    state=st.sampled_from(list(cp.ClaimState)),
    namespace=ids,
    name=ids,
    at=st.floats(0, 2e9, allow_nan=False),
    devices=st.lists(devices, max_size=2).map(tuple),
)
checkpoints = st.builds(
    cp.Checkpoint,
    boot_id=ids,
    claims=st.dictionaries(ids, entries, max_size=4),
)


@settings(max_examples=40)
@given(checkpoints)
def test_round_trip(value: cp.Checkpoint) -> None:
    assert cp.decode(cp.encode(value)) == value


any_text = st.text(max_size=8)  # quotes, backslashes, non-ASCII: escaping must match
odd_checkpoints = st.builds(
    cp.Checkpoint,
    boot_id=any_text,
    claims=st.dictionaries(
        any_text,
        st.builds(
            cp.ClaimEntry,
            state=st.sampled_from(list(cp.ClaimState)),
            namespace=any_text,
            name=any_text,
            at=st.floats(0, 2e9, allow_nan=False),
        ),
        max_size=4,
    ),
)


@settings(max_examples=60)
@given(st.one_of(checkpoints, odd_checkpoints))
def test_encoding_is_the_canonical_json_of_the_whole_document(value: cp.Checkpoint) -> None:
    raw = cp.encode(value)
    doc = json.loads(raw)
    assert raw == json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    stored = doc.pop("checksum")
    assert stored == cp.checksum(doc)


@settings(max_examples=40)
@given(checkpoints, st.data())
def test_any_changed_byte_of_content_is_detected(value: cp.Checkpoint, data: st.DataObject) -> None:
    raw = bytearray(cp.encode(value))
    index = data.draw(st.integers(0, len(raw) - 1))
    replacement = data.draw(st.integers(32, 126).filter(lambda b: b != raw[index]))
    raw[index] = replacement
    with pytest.raises(cp.CorruptCheckpoint):
        cp.decode(bytes(raw))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(version=2), "version: 2 is not supported"),
        (lambda d: d.update(format="other"), "format: expected"),
        (lambda d: d.update(checksum="sha256:00"), "checksum: stored"),
    ],
)
def test_rejects_other_versions_and_formats(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(cp.encode(cp.Checkpoint(boot_id="b")))
    mutate(doc)
    with pytest.raises(cp.CorruptCheckpoint, match=message):
        cp.decode(json.dumps(doc).encode())


def test_rejects_garbage() -> None:
    for data in (b"", b"{", b"[]", b"\xff\xfe"):
        with pytest.raises(cp.CorruptCheckpoint):
            cp.decode(data)


def test_transitions() -> None:
    entry = cp.ClaimEntry(cp.ClaimState.PREPARE_STARTED, "ns", "c", 1.0)
    value = cp.Checkpoint(boot_id="b").with_claim("u", entry)
    gone = value.aborted("u", "ns", "c", 5.0)
    assert gone.claims["u"] == cp.ClaimEntry(cp.ClaimState.PREPARE_ABORTED, "ns", "c", 5.0)
    assert dict(gone.live()) == {}
    again = gone.with_claim("u", entry)
    assert again.claims["u"] == entry
    assert gone.expire_aborted(now=95.0, ttl=90.0).claims == {}  # upstream: age >= TTL
    assert gone.expire_aborted(now=94.9, ttl=90.0) is gone
    assert value.expire_aborted(now=1e9, ttl=90.0) is value  # only aborted entries expire


def test_an_aborted_entry_refuses_only_requests_that_began_before_it() -> None:
    aborted = cp.ClaimEntry(cp.ClaimState.PREPARE_ABORTED, "ns", "c", 5.0)
    assert aborted.refuses(4.0)
    assert aborted.refuses(5.0)
    assert not aborted.refuses(5.5)
    started = cp.ClaimEntry(cp.ClaimState.PREPARE_STARTED, "ns", "c", 5.0)
    assert not started.refuses(4.0)


def test_aborted_entries_carry_upstreams_state_and_aborted_at() -> None:
    value = cp.Checkpoint(boot_id="b").aborted("u", "ns", "c", 1781111149.75)
    entry = json.loads(cp.encode(value))["claims"]["u"]
    assert entry["state"] == "PrepareAborted"
    assert entry["abortedAt"] == "2026-06-10T17:05:49Z"  # UTC, whole seconds, cut
    assert (entry["namespace"], entry["name"], entry["devices"]) == ("ns", "c", [])
    completed = cp.ClaimEntry(cp.ClaimState.PREPARE_COMPLETED, "ns", "c", 1.0)
    wire = json.loads(cp.encode(value.with_claim("v", completed)))["claims"]["v"]
    assert "abortedAt" not in wire
    assert (wire["namespace"], wire["name"]) == ("ns", "c")  # kept on completed entries


@settings(max_examples=60)
@given(st.floats(0, 4e9, allow_nan=False))
def test_aborted_at_alone_gives_the_abort_time_to_the_second(at: float) -> None:
    doc = json.loads(cp.encode(cp.Checkpoint(boot_id="b").aborted("u", "ns", "c", at)))
    del doc["claims"]["u"]["at"]
    doc.pop("checksum")
    doc["checksum"] = cp.checksum(doc)
    read = cp.decode(json.dumps(doc).encode()).claims["u"]
    assert read.aborted
    assert read.at == float(int(at))


def test_a_bad_aborted_at_is_corrupt_and_named() -> None:
    doc = json.loads(cp.encode(cp.Checkpoint(boot_id="b").aborted("u", "ns", "c", 1.0)))
    del doc["claims"]["u"]["at"]
    doc["claims"]["u"]["abortedAt"] = "yesterday"
    doc.pop("checksum")
    doc["checksum"] = cp.checksum(doc)
    with pytest.raises(cp.CorruptCheckpoint, match="abortedAt: 'yesterday'"):
        cp.decode(json.dumps(doc).encode())


def test_tombstones_of_the_earlier_layout_are_read_as_aborted_entries() -> None:
    completed = cp.ClaimEntry(cp.ClaimState.PREPARE_COMPLETED, "ns", "c", 1.0)
    doc = json.loads(cp.encode(cp.Checkpoint(boot_id="b").with_claim("v", completed)))
    doc.pop("checksum")
    doc["tombstones"] = [["u", 7.5]]
    doc["checksum"] = cp.checksum(doc)
    read = cp.decode(json.dumps(doc).encode())
    assert read.claims == {
        "v": completed,
        "u": cp.ClaimEntry(cp.ClaimState.PREPARE_ABORTED, "", "", 7.5),
    }
    assert "tombstones" not in json.loads(cp.encode(read))  # written in the new layout


def test_store_startup_rules(tmp_path: Path) -> None:
    reported: list[tuple[Path, str]] = []
    path = tmp_path / cp.FILE_NAME
    store = CheckpointStore(path, on_corrupt=lambda p, why: reported.append((p, why)))
    assert store.load_at_startup("boot-1").outcome is Startup.FRESH
    entry = cp.ClaimEntry(cp.ClaimState.PREPARE_COMPLETED, "ns", "c", 1.0)
    store.write(store.read().with_claim("u", entry))
    kept = CheckpointStore(path).load_at_startup("boot-1")
    assert (kept.outcome, set(kept.checkpoint.claims)) == (Startup.KEPT, {"u"})
    rebooted = CheckpointStore(path).load_at_startup("boot-2")
    assert rebooted.outcome is Startup.REBOOTED
    assert rebooted.checkpoint.claims == {}
    assert CheckpointStore(path).read().boot_id == "boot-2"
    # A file from a version without boot IDs keeps its claims and adopts the current boot.
    path.write_bytes(cp.encode(cp.Checkpoint(boot_id="", claims={"u": entry})))
    adopted = CheckpointStore(path).load_at_startup("boot-3")
    assert adopted.outcome is Startup.ADOPTED_BOOT_ID
    assert set(adopted.checkpoint.claims) == {"u"}
    assert cp.decode(path.read_bytes()).boot_id == "boot-3"
    assert reported == []


def test_corrupt_at_startup_is_moved_aside_and_reported(tmp_path: Path) -> None:
    reported: list[tuple[Path, str]] = []
    path = tmp_path / cp.FILE_NAME
    path.write_text('{"format": "computedomain.kubeletplugin/checkpoint", truncated')
    result = CheckpointStore(path, on_corrupt=lambda p, w: reported.append((p, w))).load_at_startup(
        "boot-1"
    )
    assert result.outcome is Startup.CORRUPT
    assert result.moved_to is not None
    assert result.moved_to.read_text().endswith("truncated")
    assert reported == [(result.moved_to, result.reason)]
    assert "not valid JSON" in result.reason
    assert cp.decode(path.read_bytes()) == cp.Checkpoint(boot_id="boot-1")


def test_corrupt_at_run_time_keeps_last_good_state(tmp_path: Path) -> None:
    reported: list[str] = []
    path = tmp_path / cp.FILE_NAME
    store = CheckpointStore(path, on_corrupt=lambda p, w: reported.append(w))
    store.load_at_startup("b")
    entry = cp.ClaimEntry(cp.ClaimState.PREPARE_COMPLETED, "ns", "c", 1.0)
    store.write(store.read().with_claim("u", entry))
    path.write_text("garbage")
    assert set(store.read().claims) == {"u"}
    assert len(reported) == 1
    assert set(cp.decode(path.read_bytes()).claims) == {"u"}
    assert len(list(tmp_path.glob(f"{cp.FILE_NAME}.corrupt-*"))) == 1


def test_file_mode_and_boot_id(tmp_path: Path) -> None:
    path = tmp_path / cp.FILE_NAME
    CheckpointStore(path).load_at_startup("b")
    assert path.stat().st_mode & 0o777 == 0o600
    assert not list(tmp_path.glob(".*tmp"))
    boot = tmp_path / "boot_id"
    boot.write_text("0b3a7c62-1e0b-4ea4-9b3c-9f1d2a1b1c3d\n")
    assert read_boot_id(boot) == "0b3a7c62-1e0b-4ea4-9b3c-9f1d2a1b1c3d"
