"""The real backend through pynvml and the C ABI of the mock NVML library, against the fake.

For every named profile the two backends must answer the same, field by field; pynvml's own
ctypes structs read what the library writes, so a wrong struct layout, version or ``byref``
shows up here as a wrong value or an error.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import subprocess
import sys
import uuid
from pathlib import Path

import attrs
import pynvml
import pytest

from computedomain.nvml import clique, fake, hardware
from computedomain.nvml.real import RealNvml
from computedomain.nvml.types import (
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_UNKNOWN,
    FabricInfo,
    NvmlError,
)
from tests.unit.nvml.conftest import Serve

RACK = "3f1b8e2a-5c4d-4e6f-9a0b-1c2d3e4f5a6b.7"


@pytest.mark.parametrize("profile", list(fake.Profile), ids=str)
@pytest.mark.parametrize("rack", [fake.DEFAULT_CLIQUE, RACK])
def test_backends_agree(serve: Serve, profile: fake.Profile, rack: str) -> None:
    real = serve(fake.document(profile, rack))
    faked = fake.FakeNvml(profile=profile, clique=rack)
    assert real.driver_version() == faked.driver_version()
    real_gpus, fake_gpus = real.gpus(), faked.gpus()
    assert len(real_gpus) == len(fake_gpus) > 0
    for mine, theirs in zip(real_gpus, fake_gpus, strict=True):
        assert attrs.asdict(mine) == attrs.asdict(theirs)
    for strict in (True, False):
        outcomes = []
        for gpus in (real_gpus, fake_gpus):
            try:
                outcomes.append(clique.discover(gpus, strict=strict))
            except clique.CliqueError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]


def test_without_a_profile_it_is_a_gb200_rack_member(
    driver_root: Path, monkeypatch: pytest.MonkeyPatch, unloaded: None
) -> None:
    monkeypatch.delenv("NVML_MOCK_PROFILE", raising=False)
    gpus = RealNvml(driver_root=driver_root).gpus()
    assert gpus == fake.FakeNvml(profile=fake.Profile.GB200).gpus()
    assert clique.discover(gpus, strict=True) == fake.DEFAULT_CLIQUE


@pytest.mark.parametrize("profile", list(fake.Profile), ids=str)
def test_pynvml_reads_every_field(serve: Serve, profile: fake.Profile) -> None:
    doc = fake.document(profile, RACK)
    serve(doc).driver_version()  # loads the library from the driver root
    pynvml.nvmlInit()
    try:
        assert pynvml.nvmlSystemGetDriverVersion() == doc.driver_version
        assert pynvml.nvmlSystemGetNVMLVersion() == doc.nvml_version
        assert pynvml.nvmlSystemGetCudaDriverVersion() == doc.cuda_driver_version
        assert pynvml.nvmlSystemGetCudaDriverVersion_v2() == doc.cuda_driver_version
        assert pynvml.nvmlDeviceGetCount() == len(doc.gpus)
        for index, gpu in enumerate(doc.gpus):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            assert pynvml.nvmlDeviceGetIndex(handle) == index
            assert pynvml.nvmlDeviceGetMinorNumber(handle) == index
            assert pynvml.nvmlDeviceGetName(handle) == gpu.name
            assert pynvml.nvmlDeviceGetUUID(handle) == gpu.uuid
            assert pynvml.nvmlDeviceGetArchitecture(handle) == gpu.architecture
            assert pynvml.nvmlDeviceGetCudaComputeCapability(handle) == gpu.compute_capability
            pci = pynvml.nvmlDeviceGetPciInfo(handle)
            domain, bus, rest = gpu.pci_bus_id.upper().split(":")
            assert pci.busId == gpu.pci_bus_id.upper()
            assert pci.busIdLegacy == f"{domain[-4:]}:{bus}:{rest}"
            assert (pci.domain, pci.bus, pci.device) == (int(domain, 16), int(bus, 16), 0)
            assert (pci.pciDeviceId, pci.pciSubSystemId) == (
                gpu.pci_device_id,
                gpu.pci_subsystem_id,
            )
            by_uuid = pynvml.nvmlDeviceGetHandleByUUID(gpu.uuid)
            by_bus = pynvml.nvmlDeviceGetHandleByPciBusId(gpu.pci_bus_id.lower())
            assert pynvml.nvmlDeviceGetIndex(by_uuid) == pynvml.nvmlDeviceGetIndex(by_bus) == index
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlDeviceGetHandleByIndex(len(doc.gpus))
        with pytest.raises(pynvml.NVMLError_NotFound):
            pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid.uuid4()}")
    finally:
        pynvml.nvmlShutdown()


def _unusual(fabric_versions: tuple[int, ...]) -> hardware.Document:
    """A one-GPU document whose fabric fields all have distinctive values."""
    gb200 = fake.document(fake.Profile.GB200)
    gpu = gb200.gpus[0]
    info = FabricInfo(
        cluster_uuid=uuid.UUID("f0e1d2c3-b4a5-4697-8879-6a5b4c3d2e1f"),
        clique_id=0xFFFFFFFE,
        state=3,
        status=0,
        health_mask=0xA5A5A5A5,
        health_summary=3,
    )
    return attrs.evolve(
        gb200, gpus=(attrs.evolve(gpu, fabric=info),), fabric_info_versions=fabric_versions
    )


@pytest.mark.parametrize(
    ("versions", "mask", "summary"),
    [((2, 3), 0xA5A5A5A5, 3), ((2,), 0xA5A5A5A5, None), ((), None, None)],
    ids=["v3", "v2-only driver", "legacy-only driver"],
)
def test_struct_versions_and_fallbacks(
    serve: Serve, versions: tuple[int, ...], mask: int | None, summary: int | None
) -> None:
    doc = _unusual(versions)
    (gpu,) = serve(doc).gpus()
    assert gpu.fabric is not None
    assert gpu.fabric.cluster_uuid == uuid.UUID("f0e1d2c3-b4a5-4697-8879-6a5b4c3d2e1f")
    assert (gpu.fabric.clique_id, gpu.fabric.state, gpu.fabric.status) == (0xFFFFFFFE, 3, 0)
    assert (gpu.fabric.health_mask, gpu.fabric.health_summary) == (mask, summary)
    assert (gpu,) == fake.nvml_gpus(doc)


def test_version_macros_match_pynvml() -> None:
    for struct, version in (
        (pynvml.c_nvmlGpuFabricInfo_v2_t, pynvml.nvmlGpuFabricInfo_v2),
        (pynvml.c_nvmlGpuFabricInfo_v3_t, pynvml.nvmlGpuFabricInfo_v3),
    ):
        assert ctypes.sizeof(struct) == version & 0xFFFFFF
    assert ctypes.sizeof(pynvml.c_nvmlGpuFabricInfo_t) == 28
    assert ctypes.sizeof(pynvml.nvmlPciInfo_t) == 68


def test_a_struct_version_the_driver_does_not_know_is_a_mismatch(serve: Serve) -> None:
    serve(_unusual((2,))).driver_version()
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        v3 = pynvml.c_nvmlGpuFabricInfo_v3_t()
        with pytest.raises(pynvml.NVMLError) as err:
            pynvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(v3))
        assert err.value.value == NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        v2 = pynvml.c_nvmlGpuFabricInfo_v2_t()
        v2.version = (3 << 24) | ctypes.sizeof(v2)  # a v3 tag on a v2-sized struct
        with pytest.raises(pynvml.NVMLError) as err:
            pynvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(v2))
        assert err.value.value == NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    finally:
        pynvml.nvmlShutdown()


def test_symbols_it_does_not_export_are_function_not_found(serve: Serve) -> None:
    serve(fake.document(fake.Profile.GB200)).driver_version()
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_FunctionNotFound):
            pynvml.nvmlDeviceGetMemoryInfo(handle)
    finally:
        pynvml.nvmlShutdown()


def test_the_older_entry_points(serve: Serve) -> None:
    """The unsuffixed and _v2 symbols pynvml no longer calls, called through ctypes."""
    doc = fake.document(fake.Profile.H100)
    serve(doc).driver_version()
    library = pynvml.nvmlLib
    assert library.nvmlInit_v2() == 0
    assert library.nvmlInit() == 0
    try:
        count = ctypes.c_uint()
        assert library.nvmlDeviceGetCount(ctypes.byref(count)) == 0
        assert count.value == len(doc.gpus) == 8
        handle = pynvml.c_nvmlDevice_t()
        assert library.nvmlDeviceGetHandleByIndex(ctypes.c_uint(7), ctypes.byref(handle)) == 0
        for symbol in ("nvmlDeviceGetPciInfo", "nvmlDeviceGetPciInfo_v2"):
            pci = pynvml.nvmlPciInfo_v2_t()
            assert getattr(library, symbol)(handle, ctypes.byref(pci)) == 0
            assert (pci.busId, pci.bus, pci.pciDeviceId) == ("0000:DB:00.0", 0xDB, 0x233010DE)
        small = ctypes.create_string_buffer(8)
        assert library.nvmlDeviceGetName(handle, small, ctypes.c_uint(8)) == 7  # too small
        legacy = pynvml.c_nvmlGpuFabricInfo_t()
        assert library.nvmlDeviceGetGpuFabricInfo(handle, ctypes.byref(legacy)) == 3
        # Codes pynvml has no text for come from nvmlErrorString.
        assert str(pynvml.NVMLError(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)) == (
            "Argument Version Mismatch"
        )
    finally:
        assert library.nvmlShutdown() == 0
        assert library.nvmlShutdown() == 0
    assert library.nvmlShutdown() == 1  # UNINITIALIZED: shutdown is reference-counted
    assert library.nvmlDeviceGetCount(ctypes.byref(ctypes.c_uint())) == 1


def test_init_failure_is_translated(serve: Serve) -> None:
    doc = attrs.evolve(fake.document(fake.Profile.GB200), init_return=9)  # DRIVER_NOT_LOADED
    with pytest.raises(NvmlError) as err:
        serve(doc).gpus()
    assert (err.value.operation, err.value.code) == ("nvmlInitWithFlags", 9)
    assert str(err.value) == "nvmlInitWithFlags: nvmlReturn(9)"


def test_a_bad_profile_file_fails_init_with_a_message(
    driver_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    unloaded: None,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"driverVersion": "580.95.05", "gpus": 4}')
    monkeypatch.setenv("NVML_MOCK_PROFILE", str(bad))
    with pytest.raises(NvmlError) as err:
        RealNvml(driver_root=driver_root).driver_version()
    assert (err.value.operation, err.value.code) == ("nvmlInitWithFlags", NVML_ERROR_UNKNOWN)
    assert f"nvml-mock: profile {bad} (NVML_MOCK_PROFILE): nvmlVersion: is required" in (
        capfd.readouterr().err
    )
    monkeypatch.setenv("NVML_MOCK_PROFILE", str(tmp_path / "missing.json"))
    with pytest.raises(NvmlError):
        RealNvml(driver_root=driver_root).driver_version()
    assert "missing.json (NVML_MOCK_PROFILE): cannot open: No such file" in capfd.readouterr().err


def test_library_missing(tmp_path: Path) -> None:
    # A fresh process: in this one the mock, loaded under its soname, would answer dlopen.
    if ctypes.util.find_library("nvidia-ml") is not None:
        pytest.skip("this host has an NVIDIA driver, so the library is not missing")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from computedomain.nvml.real import RealNvml\n"
        "from computedomain.nvml.types import NvmlError\n"
        "try:\n"
        "    RealNvml(driver_root=Path(sys.argv[1])).driver_version()\n"
        "except NvmlError as exc:\n"
        "    print(exc.code, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
    )
    code = NVML_ERROR_LIBRARY_NOT_FOUND
    assert done.stdout.strip() == f"{code} nvmlInitWithFlags: ERROR_LIBRARY_NOT_FOUND"


def test_exports_exactly_the_documented_symbols(mock_library: Path) -> None:
    text = (Path(__file__).resolve().parents[3] / "docs/nvml-mock.md").read_text()
    listed = text.split("<!-- exported-symbols")[1].split("<!-- end exported-symbols")[0]
    documented = set(re.findall(r"`(nvml\w+)`", listed))
    table = subprocess.run(
        ["nm", "-D", "--defined-only", str(mock_library)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    exported = {line.split()[-1] for line in table.splitlines() if line.strip()}
    assert exported == documented
