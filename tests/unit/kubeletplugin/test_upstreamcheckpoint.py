"""Importing upstream's checkpoint.json: checksums (test vector from the spec) and conversion."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from computedomain.kubeletplugin import upstreamcheckpoint as up
from computedomain.kubeletplugin.checkpoint import (
    FILE_NAME,
    ClaimState,
    CorruptCheckpoint,
    DeviceType,
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
