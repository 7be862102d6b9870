"""Detecting a single-node NVLink system from the files under the dev root."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.nvml import fake, localfabric


def _write(root: Path, node_path: str, data: bytes) -> None:
    target = root / node_path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def test_nothing_present_is_no_local_fabric(tmp_path: Path) -> None:
    assert not localfabric.has_local_fabric(tmp_path)


def test_a_listed_nvswitch_is_a_local_fabric(tmp_path: Path) -> None:
    (tmp_path / localfabric.NVSWITCH_DEVICES / "0000:05:00.0").mkdir(parents=True)
    assert localfabric.has_local_fabric(tmp_path)


def test_an_empty_nvswitch_directory_is_not(tmp_path: Path) -> None:
    (tmp_path / localfabric.NVSWITCH_DEVICES).mkdir(parents=True)
    assert not localfabric.has_local_fabric(tmp_path)


@pytest.mark.parametrize(
    ("vpd", "expected"),
    [(b"\x82\x10PN:SW_MNG\x78", True), (b"\x82\x10PN:MCX75310\x78", False)],
    ids=["switch-managed", "plain-hca"],
)
def test_switch_managed_vpd(tmp_path: Path, vpd: bytes, expected: bool) -> None:
    (tmp_path / localfabric.INFINIBAND_DEVICES / "mlx5_0").mkdir(parents=True)  # no VPD
    _write(tmp_path, f"{localfabric.INFINIBAND_DEVICES}/mlx5_1/{localfabric.VPD}", vpd)
    assert localfabric.has_local_fabric(tmp_path) is expected


def test_nvswitches_are_checked_first(tmp_path: Path) -> None:
    (tmp_path / localfabric.NVSWITCH_DEVICES / "0000:05:00.0").mkdir(parents=True)
    # An InfiniBand VPD that cannot be read would be an error, but is never read.
    (tmp_path / localfabric.INFINIBAND_DEVICES / "mlx5_0" / localfabric.VPD).mkdir(parents=True)
    assert localfabric.has_local_fabric(tmp_path)


def test_an_unreadable_vpd_is_an_error_naming_it(tmp_path: Path) -> None:
    vpd = tmp_path / localfabric.INFINIBAND_DEVICES / "mlx5_0" / localfabric.VPD
    vpd.mkdir(parents=True)  # reading a directory fails with EISDIR, not "absent"
    with pytest.raises(localfabric.LocalFabricError) as err:
        localfabric.has_local_fabric(tmp_path)
    assert str(err.value).startswith(
        "error checking if node is single-node NVLink system: failed to check if node has "
        "local fabric: "
    )
    assert str(vpd) in str(err.value)


@pytest.mark.parametrize("profile", list(fake.Profile), ids=str)
def test_the_fake_profiles_files_tell_their_fabric(tmp_path: Path, profile: fake.Profile) -> None:
    for node_path, text in fake.local_fabric_files(profile).items():
        _write(tmp_path, node_path, text.encode())
    partitioned = profile in (
        fake.Profile.HGX_H100_PARTITION_PENDING,
        fake.Profile.HGX_B200_PARTITION_PENDING,
    )
    assert localfabric.has_local_fabric(tmp_path) is partitioned
