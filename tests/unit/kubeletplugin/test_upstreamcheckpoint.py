"""Importing upstream's checkpoint.json: checksums (test vector from the spec) and conversion,
for files from before and after upstream's PrepareAborted state."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain.kubeletplugin import upstreamcheckpoint as up
from computedomain.kubeletplugin.checkpoint import (
    FILE_NAME,
    ClaimEntry,
    ClaimState,
    CorruptCheckpoint,
    DeviceType,
    rfc3339,
)
from computedomain.kubeletplugin.checkpointstore import CheckpointStore

DRIVER = "compute-domain.nvidia.com"


def test_spec_test_vector() -> None:
    assert up.checksum(b'{"checksum":0,"v1":{}}') == 1083090442


def test_go_escapes() -> None:
    assert up.go_json({"a": "<&>\u2028é"}) == b'{"a":"\\u003c\\u0026\\u003e\\u2028\xc3\xa9"}'


def _status(device: str, kind: str, mode: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": kind,
        "domainID": "cd-1",
    }
    if mode:
        params["allocationMode"] = mode
    request = device.split("-", maxsplit=1)[0]
    return {
        "allocation": {
            "devices": {
                "results": [{"request": request, "driver": DRIVER, "pool": "n1", "device": device}],
                "config": [
                    {
                        "source": "FromClaim",
                        "requests": [request],
                        "opaque": {"driver": DRIVER, "parameters": params},
                    }
                ],
            }
        }
    }


def upstream_file() -> bytes:
    completed = {
        "checkpointState": "PrepareCompleted",
        "status": _status("channel-0", "ComputeDomainChannelConfig", "All"),
        "preparedDevices": [
            {
                "devices": [
                    {
                        "channel": {
                            "info": {"id": 0},
                            "device": {
                                "Requests": ["channel"],
                                "PoolName": "n1",
                                "DeviceName": "channel-0",
                                "CDIDeviceIDs": [
                                    "k8s.compute-domain.nvidia.com/claim=u1-channel-0"
                                ],
                            },
                        },
                        "daemon": None,
                    }
                ],
                "configState": {"Type": "channel", "ComputeDomain": "cd-1"},
            }
        ],
    }
    started = {
        "checkpointState": "PrepareStarted",
        "status": _status("daemon-0", "ComputeDomainDaemonConfig"),
        "name": "d",
        "namespace": "drivers",
    }
    v1 = {"preparedClaims": {"u1": {k: completed[k] for k in ("status", "preparedDevices")}}}
    v2 = {"checksum": 0, "preparedClaims": {"u1": completed, "u2": started}, "nodeBootID": "b-1"}
    v2["checksum"] = up.checksum(up.go_json(v2))
    doc = {"checksum": up.checksum(up.go_json({"checksum": 0, "v1": v1})), "v1": v1, "v2": v2}
    return up.go_json(doc)


def test_import() -> None:
    checkpoint = up.parse(upstream_file(), now=5.0)
    assert checkpoint.boot_id == "b-1"
    channel = checkpoint.claims["u1"]
    assert channel.state is ClaimState.PREPARE_COMPLETED
    (device,) = channel.devices
    assert (device.type, device.domain_id, device.device) == (
        DeviceType.CHANNEL,
        "cd-1",
        "channel-0",
    )
    assert device.cdi_device_ids == ("k8s.compute-domain.nvidia.com/claim=u1-channel-0",)
    assert len(device.channels) == 2048  # allocationMode All
    daemon = checkpoint.claims["u2"]
    assert (daemon.state, daemon.namespace, daemon.name) == (
        ClaimState.PREPARE_STARTED,
        "drivers",
        "d",
    )
    assert daemon.devices[0].type is DeviceType.DAEMON


def test_v1_only_file() -> None:
    doc = json.loads(upstream_file())
    del doc["v2"]
    checkpoint = up.parse(up.go_json(doc), now=5.0)
    assert set(checkpoint.claims) == {"u1"}
    assert checkpoint.claims["u1"].completed
    assert checkpoint.boot_id == ""


@pytest.mark.parametrize("section", ["top", "v2"])
def test_tampering_is_detected(section: str) -> None:
    doc = json.loads(upstream_file())
    tampered = copy.deepcopy(doc)
    if section == "top":
        tampered["v1"]["preparedClaims"]["u1"]["status"]["allocation"]["devices"]["results"][0][
            "pool"
        ] = "x"
    else:
        tampered["v2"]["nodeBootID"] = "other"
    with pytest.raises(
        CorruptCheckpoint, match=f"{'top-level' if section == 'top' else 'v2'} checksum"
    ):
        up.parse(up.go_json(tampered), now=0.0)


def test_store_imports_once_and_moves_theirs(tmp_path: Path) -> None:
    theirs = tmp_path / "checkpoint.json"
    theirs.write_bytes(upstream_file())
    store = CheckpointStore(tmp_path / FILE_NAME)
    assert store.import_upstream(theirs, now=7.0) == 2
    assert not theirs.exists()
    assert (tmp_path / "checkpoint.json.imported-7").exists()
    loaded = store.load_at_startup("b-1")  # same boot: the imported claims stay
    assert set(loaded.checkpoint.claims) == {"u1", "u2"}
    theirs.write_bytes(upstream_file())
    assert store.import_upstream(theirs, now=8.0) is None  # ours exists: never again
    assert theirs.exists()


def test_unreadable_upstream_file_is_moved_aside(tmp_path: Path) -> None:
    theirs = tmp_path / "checkpoint.json"
    theirs.write_bytes(upstream_file().replace(b'"b-1"', b'"b-2"'))
    store = CheckpointStore(tmp_path / FILE_NAME)
    assert store.import_upstream(theirs, now=7.0) is None
    assert not theirs.exists()
    assert len(list(tmp_path.glob("checkpoint.json.corrupt-*"))) == 1
    assert not store.path.exists()


def _with_checksums(v1: str, v2: str) -> bytes:
    """The file Go writes around two compact sections: both checksums filled in."""
    top = up.checksum(f'{{"checksum":0,"v1":{v1}}}'.encode())
    v2_sum = up.checksum(v2.encode())  # Go hashes the section with its checksum at 0
    v2 = v2.replace('{"checksum":0,', f'{{"checksum":{v2_sum},', 1)
    return f'{{"checksum":{top},"v1":{v1},"v2":{v2}}}'.encode()


def new_format_file() -> bytes:
    """A checkpoint as upstream writes it since its PrepareAborted state (v0.5), byte for byte:
    Go's field order (checkpointState, status, preparedDevices, name, namespace, abortedAt),
    name and namespace on the completed entry too, the aborted entry with no devices, and the
    V1 section holding the completed claim only."""
    status = json.dumps(_status("channel-0", "ComputeDomainChannelConfig", "Single"))
    status = status.replace(", ", ",").replace(": ", ":")
    devices = (
        '[{"devices":[{"channel":{"info":{"id":0},"device":{"Requests":["channel"],'
        '"PoolName":"n1","DeviceName":"channel-0","CDIDeviceIDs":'
        '["k8s.compute-domain.nvidia.com/claim=u1-channel-0"]}},"daemon":null}],'
        '"configState":{"Type":"channel","ComputeDomain":"cd-1"}}]'
    )
    completed = (
        f'{{"checkpointState":"PrepareCompleted","status":{status},"preparedDevices":{devices},'
        '"name":"job","namespace":"team"}'
    )
    aborted = (
        f'{{"checkpointState":"PrepareAborted","status":{status},'
        '"name":"old","namespace":"team","abortedAt":"2026-06-10T17:05:49Z"}'
    )
    no_time = f'{{"checkpointState":"PrepareAborted","status":{status},"name":"x","namespace":"t"}}'
    v1 = f'{{"preparedClaims":{{"u1":{{"status":{status},"preparedDevices":{devices}}}}}}}'
    v2 = (
        f'{{"checksum":0,"preparedClaims":{{"u1":{completed},"u3":{aborted},"u4":{no_time}}},'
        '"nodeBootID":"b-1"}'
    )
    return _with_checksums(v1, v2)


def test_the_new_format_is_verified_and_imported() -> None:
    data = new_format_file()
    assert json.loads(data)["v2"]["preparedClaims"]["u3"]["abortedAt"]  # sanity: the new field
    checkpoint = up.parse(data, now=1781111200.0)
    assert set(checkpoint.claims) == {"u1", "u3"}  # no abortedAt: dropped, as upstream does
    completed = checkpoint.claims["u1"]
    assert (completed.state, completed.namespace, completed.name) == (
        ClaimState.PREPARE_COMPLETED,
        "team",
        "job",
    )
    assert completed.devices[0].channels == (0,)
    aborted = checkpoint.claims["u3"]
    assert aborted == ClaimEntry(ClaimState.PREPARE_ABORTED, "team", "old", 1781111149.0)


def test_a_changed_aborted_at_breaks_the_v2_checksum() -> None:
    data = new_format_file().replace(b"17:05:49Z", b"17:05:48Z")
    with pytest.raises(CorruptCheckpoint, match="v2 checksum"):
        up.parse(data, now=0.0)


def test_a_bad_aborted_at_is_refused_naming_the_field() -> None:
    v2 = (
        '{"checksum":0,"preparedClaims":{"u3":{"checkpointState":"PrepareAborted",'
        '"status":{},"abortedAt":"soon"}},"nodeBootID":"b-1"}'
    )
    with pytest.raises(CorruptCheckpoint, match=r"v2\.preparedClaims\.u3\.abortedAt: 'soon'"):
        up.parse(_with_checksums("{}", v2), now=0.0)


def test_store_imports_the_new_format(tmp_path: Path) -> None:
    theirs = tmp_path / "checkpoint.json"
    theirs.write_bytes(new_format_file())
    store = CheckpointStore(tmp_path / FILE_NAME)
    assert store.import_upstream(theirs, now=1781111200.0) == 2
    loaded = store.load_at_startup("b-1")
    assert loaded.checkpoint.claims["u3"].aborted


upstream_claims = st.dictionaries(
    st.text(alphabet="0123456789abcdef-", min_size=1, max_size=8),
    st.tuples(
        st.sampled_from(["PrepareStarted", "PrepareCompleted", "PrepareAborted"]),
        st.text(max_size=6),  # namespace (any text: Go's escaping must hold)
        st.text(max_size=6),  # name
        st.integers(0, 4_000_000_000),  # abortedAt, whole seconds
    ),
    max_size=5,
)


@settings(max_examples=50)
@given(upstream_claims)
def test_every_upstream_claim_keeps_its_state_names_and_abort_time(claims: dict) -> None:  # type: ignore[type-arg]
    v2_claims: dict[str, dict[str, object]] = {}
    for uid, (state, namespace, name, seconds) in claims.items():
        entry: dict[str, object] = {"checkpointState": state, "status": {}}
        entry.update(name=name, namespace=namespace)
        if state == "PrepareAborted":
            entry["abortedAt"] = rfc3339(seconds)
        v2_claims[uid] = {k: v for k, v in entry.items() if v != ""}
    v2: dict[str, object] = {"checksum": 0, "preparedClaims": v2_claims, "nodeBootID": "b"}
    v2["checksum"] = up.checksum(up.go_json(v2))
    v1: dict[str, object] = {}
    doc = {"checksum": up.checksum(up.go_json({"checksum": 0, "v1": v1})), "v1": v1, "v2": v2}
    checkpoint = up.parse(up.go_json(doc), now=1.0)
    assert set(checkpoint.claims) == set(claims)
    for uid, (state, namespace, name, seconds) in claims.items():
        entry_read = checkpoint.claims[uid]
        assert (entry_read.state.value, entry_read.namespace, entry_read.name) == (
            state,
            namespace,
            name,
        )
        assert entry_read.at == (seconds if state == "PrepareAborted" else 1.0)
        assert entry_read.devices == ()  # empty statuses plan no device
