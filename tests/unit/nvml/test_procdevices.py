"""Parsing /proc/devices and NVIDIA capability files."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.nvml import procdevices

PROC_DEVICES = """Character devices:
  1 mem
195 nvidia-frontend
 234 nvidia-caps-imex-channels
235 nvidia-caps
507 nvidia-uvm

Block devices:
240 nvidia-caps
"""


def test_char_majors_only_from_the_character_section() -> None:
    majors = procdevices.char_majors(PROC_DEVICES)
    assert majors["nvidia-caps-imex-channels"] == 234
    assert majors["nvidia-caps"] == 235  # not the block device of the same name
    assert "sd" not in majors


def test_read_char_major(tmp_path: Path) -> None:
    path = tmp_path / "devices"
    path.write_text(PROC_DEVICES)
    assert procdevices.read_char_major(path, procdevices.IMEX_CHANNELS) == 234
    with pytest.raises(procdevices.ProcError, match="no 'nvidia-nvswitch' character device"):
        procdevices.read_char_major(path, "nvidia-nvswitch")
    with pytest.raises(procdevices.ProcError, match="cannot read"):
        procdevices.read_char_major(tmp_path / "missing", procdevices.IMEX_CHANNELS)


def test_capability(tmp_path: Path) -> None:
    cap = procdevices.parse_capability(
        "DeviceFileMinor: 12\nDeviceFileMode: 292\nDeviceFileModify: 0\n"
    )
    assert cap == procdevices.Capability(minor=12, mode=292, modify=0)
    assert cap.device_path() == "/dev/nvidia-caps/nvidia-cap12"
    with pytest.raises(procdevices.ProcError, match="DeviceFileMode is missing"):
        procdevices.parse_capability("DeviceFileMinor: 1\nDeviceFileModify: 1\n")
    with pytest.raises(procdevices.ProcError, match=r"DeviceFileMinor .* not a decimal"):
        procdevices.parse_capability("DeviceFileMinor: 0x1\nDeviceFileMode: 1\nDeviceFileModify: 1")
    with pytest.raises(procdevices.ProcError, match="cannot read"):
        procdevices.read_capability(tmp_path / "fabric-imex-mgmt")
