"""The fake backend's settings and the driver files it describes."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.api.errors import ConfigError
from computedomain.nvml import backends, fake, hardware, procdevices
from computedomain.nvml.interface import BackendName, Nvml
from computedomain.nvml.real import RealNvml


def test_profile_names_and_errors() -> None:
    assert [p.value for p in fake.Profile] == [
        "gb200",
        "h100",
        "fabric-in-progress",
        "fabric-failure",
        "mixed-cliques",
        "hgx-h100-partition-pending",
        "hgx-b200-partition-pending",
    ]
    with pytest.raises(ConfigError, match=r"FAKE_NVML_PROFILE: unknown profile 'a100'.*gb200"):
        fake.parse_profile("a100")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "must not be empty"),
        ("not-a-clique", "is not a clique ID"),
        ("00000000-0000-0000-0000-000000000000.1", "all zeros"),
        ("7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17", "is not a clique ID"),
    ],
)
def test_bad_clique_setting(value: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=rf"FAKE_NVML_CLIQUE: .*{reason}"):
        fake.FakeNvml(clique=value)


def test_gpu_uuids_stable_and_distinct_per_rack() -> None:
    a = fake.FakeNvml(clique="7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.1").gpus()
    b = fake.FakeNvml(clique="7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.2").gpus()
    assert [g.uuid for g in a] == [g.uuid for g in fake.FakeNvml(clique=a[0].fabric.clique).gpus()]  # type: ignore[union-attr]
    assert not {g.uuid for g in a} & {g.uuid for g in b}
    assert len({g.uuid for g in a}) == 4


def test_driver_files_parse_with_the_plugin_parsers() -> None:
    majors = procdevices.char_majors(fake.proc_devices_text())
    assert majors[procdevices.IMEX_CHANNELS] == 234
    assert majors[procdevices.NVIDIA_CAPS] == 235
    cap = procdevices.parse_capability(fake.fabric_imex_mgmt_text())
    assert (cap.minor, cap.mode) == (fake.FABRIC_IMEX_MGMT_MINOR, 256)


def test_backend_selection() -> None:
    chosen = backends.select(BackendName.FAKE, profile=fake.Profile.H100)
    assert isinstance(chosen, fake.FakeNvml)
    assert isinstance(chosen, Nvml)
    assert not chosen.has_fabric
    assert isinstance(backends.select(BackendName.REAL), RealNvml)
    with pytest.raises(
        ConfigError, match=r"NVML_BACKEND: unknown NVML backend 'gpu' \(valid: real, fake\)"
    ):
        backends.parse_backend("gpu")


def test_a_profile_file_is_read_afresh_at_every_query(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    first, second = (
        "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.1",
        "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.9",
    )
    path.write_text(hardware.dumps(fake.document(fake.Profile.GB200, first)))
    nvml = fake.FakeNvml(profile_file=path)
    assert {g.fabric.clique for g in nvml.gpus() if g.fabric} == {first}
    path.write_text(hardware.dumps(fake.document(fake.Profile.GB200, second)))
    assert {g.fabric.clique for g in nvml.gpus() if g.fabric} == {second}
    path.write_text("{")
    with pytest.raises(ConfigError, match=str(path)):
        nvml.gpus()
