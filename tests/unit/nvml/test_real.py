"""The real backend against a fake C library at the pynvml boundary (python-ecosystem.md §5 b).

``pynvml.nvmlLib`` is replaced by an object whose attributes are named like the C symbols, so
pynvml's own wrappers and ctypes structs run: the backend's ``byref`` use, struct versions,
fallbacks, UUID decoding and error translation are exercised without a GPU.
"""

from __future__ import annotations

import ctypes
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest

from computedomain.nvml import clique
from computedomain.nvml.real import RealNvml, locate_library
from computedomain.nvml.types import (
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_SUCCESS,
    FabricState,
    NvmlError,
)

CLUSTER = uuid.UUID("0b7d6e1c-2f3a-4b5c-8d9e-a1b2c3d4e5f6")


class FakeLib:
    """Stands in for ``CDLL('libnvidia-ml.so.1')``: attributes are the C entry points."""

    def __init__(
        self,
        *,
        gpus: int = 2,
        fabric_versions: tuple[int, ...] = (3, 2),
        has_versioned_call: bool = True,
        fabric_ret: int = NVML_SUCCESS,
        state: int = FabricState.COMPLETED,
        init_ret: int = NVML_SUCCESS,
    ) -> None:
        self.calls: list[str] = []
        self.structs_seen: list[type] = []
        self.inits = 0
        self.shutdowns = 0
        self._devices = [pynvml.struct_c_nvmlDevice_t() for _ in range(gpus)]
        self._fabric_versions = fabric_versions
        self._fabric_ret = fabric_ret
        self._state = state
        self._init_ret = init_ret
        symbols: dict[str, Callable[..., int]] = {
            "nvmlInitWithFlags": self._init,
            "nvmlShutdown": self._shutdown,
            "nvmlSystemGetDriverVersion": self._driver_version,
            "nvmlDeviceGetCount_v2": self._count,
            "nvmlDeviceGetHandleByIndex_v2": self._handle,
            "nvmlDeviceGetName": self._name,
            "nvmlDeviceGetUUID": self._uuid,
            "nvmlDeviceGetGpuFabricInfo": self._fabric_legacy,
        }
        if has_versioned_call:
            symbols["nvmlDeviceGetGpuFabricInfoV"] = self._fabric_versioned
        for name, fn in symbols.items():
            setattr(self, name, self._record(name, fn))

    def _record(self, name: str, fn: Callable[..., int]) -> Callable[..., int]:
        def call(*args: Any) -> int:
            self.calls.append(name)
            return fn(*args)

        return call

    def _init(self, flags: int) -> int:
        assert flags == pynvml.NVML_INIT_FLAG_NO_GPUS
        self.inits += 1
        return self._init_ret

    def _shutdown(self) -> int:
        self.shutdowns += 1
        return NVML_SUCCESS

    def _driver_version(self, buffer: Any, size: Any) -> int:
        buffer.value = b"570.158.01"
        return NVML_SUCCESS

    def _count(self, count_ref: Any) -> int:
        count_ref._obj.value = len(self._devices)
        return NVML_SUCCESS

    def _handle(self, index: Any, handle_ref: Any) -> int:
        handle_ref._obj.contents = self._devices[index.value]
        return NVML_SUCCESS

    def _index(self, handle: Any) -> int:
        address = ctypes.addressof(handle.contents)
        return next(i for i, d in enumerate(self._devices) if ctypes.addressof(d) == address)

    def _name(self, handle: Any, buffer: Any, size: Any) -> int:
        buffer.value = b"NVIDIA GB200"
        return NVML_SUCCESS

    def _uuid(self, handle: Any, buffer: Any, size: Any) -> int:
        buffer.value = f"GPU-{self._index(handle)}".encode()
        return NVML_SUCCESS

    def _fill(self, handle: Any, info: Any) -> int:
        if self._fabric_ret != NVML_SUCCESS:
            return self._fabric_ret
        ctypes.memmove(info.clusterUuid, CLUSTER.bytes, 16)
        info.cliqueId = 40
        info.state = self._state
        info.status = NVML_SUCCESS
        return NVML_SUCCESS

    def _fabric_versioned(self, handle: Any, info_ref: Any) -> int:
        assert isinstance(info_ref, type(ctypes.byref(ctypes.c_int()))), "pass byref(struct)"
        info = info_ref._obj
        self.structs_seen.append(type(info))
        if info.version >> 24 not in self._fabric_versions:
            return NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        info.healthMask = 5
        if hasattr(info, "healthSummary"):
            info.healthSummary = 1
        return self._fill(handle, info)

    def _fabric_legacy(self, handle: Any, info_ref: Any) -> int:
        assert isinstance(info_ref, type(ctypes.byref(ctypes.c_int()))), "pass byref(struct)"
        self.structs_seen.append(type(info_ref._obj))
        return self._fill(handle, info_ref._obj)


@pytest.fixture
def install() -> Iterator[Callable[[FakeLib], FakeLib]]:
    saved = pynvml.nvmlLib
    pynvml._nvmlGetFunctionPointer_cache.clear()

    def put(lib: FakeLib) -> FakeLib:
        pynvml._nvmlGetFunctionPointer_cache.clear()
        pynvml.nvmlLib = lib
        return lib

    yield put
    pynvml.nvmlLib = saved
    pynvml._nvmlGetFunctionPointer_cache.clear()


def test_v3_struct_with_health_summary(install: Callable[[FakeLib], FakeLib]) -> None:
    lib = install(FakeLib())
    gpus = RealNvml().gpus()
    assert [g.uuid for g in gpus] == ["GPU-0", "GPU-1"]
    info = gpus[0].fabric
    assert info is not None
    assert (info.cluster_uuid, info.clique_id, info.state) == (CLUSTER, 40, FabricState.COMPLETED)
    assert (info.health_mask, info.health_summary) == (5, 1)
    assert lib.structs_seen[0] is pynvml.c_nvmlGpuFabricInfo_v3_t
    assert clique.discover(gpus, strict=True) == f"{CLUSTER}.40"
    assert (lib.inits, lib.shutdowns) == (1, 1)


def test_v2_only_driver_falls_back(install: Callable[[FakeLib], FakeLib]) -> None:
    lib = install(FakeLib(fabric_versions=(2,)))
    gpus = RealNvml().gpus()
    assert gpus[0].fabric is not None
    assert gpus[0].fabric.health_summary is None
    assert gpus[0].fabric.health_mask == 5
    assert lib.structs_seen[:2] == [
        pynvml.c_nvmlGpuFabricInfo_v3_t,
        pynvml.c_nvmlGpuFabricInfo_v2_t,
    ]


def test_driver_without_versioned_call_uses_legacy(install: Callable[[FakeLib], FakeLib]) -> None:
    lib = install(FakeLib(has_versioned_call=False))
    gpus = RealNvml().gpus()
    assert gpus[1].fabric is not None
    assert gpus[1].fabric.health_mask is None
    assert set(lib.structs_seen) == {pynvml.c_nvmlGpuFabricInfo_t}
    assert clique.discover(gpus, strict=True) == f"{CLUSTER}.40"


def test_fabric_not_supported_is_reported_per_gpu(install: Callable[[FakeLib], FakeLib]) -> None:
    install(FakeLib(fabric_ret=NVML_ERROR_NOT_SUPPORTED))
    gpus = RealNvml().gpus()
    assert [g.fabric_return for g in gpus] == [NVML_ERROR_NOT_SUPPORTED] * 2
    assert all(g.fabric is None for g in gpus)
    assert clique.discover(gpus, strict=True) == ""


def test_in_progress_is_fatal_in_strict_mode(install: Callable[[FakeLib], FakeLib]) -> None:
    install(FakeLib(state=FabricState.IN_PROGRESS))
    with pytest.raises(clique.CliqueError, match="IN_PROGRESS"):
        clique.discover(RealNvml().gpus(), strict=True)


def test_driver_version(install: Callable[[FakeLib], FakeLib]) -> None:
    lib = install(FakeLib())
    assert RealNvml().driver_version() == "570.158.01"
    assert lib.calls == ["nvmlInitWithFlags", "nvmlSystemGetDriverVersion", "nvmlShutdown"]


def test_init_failure_is_translated(install: Callable[[FakeLib], FakeLib]) -> None:
    install(FakeLib(init_ret=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    with pytest.raises(NvmlError) as err:
        RealNvml().gpus()
    assert err.value.code == pynvml.NVML_ERROR_DRIVER_NOT_LOADED
    assert err.value.operation == "nvmlInitWithFlags"


def test_locate_library(tmp_path: Path) -> None:
    assert locate_library(tmp_path) is None
    libdir = tmp_path / "usr/lib/aarch64-linux-gnu"
    libdir.mkdir(parents=True)
    (libdir / "libnvidia-ml.so.570.158.01").write_bytes(b"")
    (libdir / "libnvidia-ml.so.1").symlink_to("libnvidia-ml.so.570.158.01")
    assert locate_library(tmp_path) == libdir / "libnvidia-ml.so.570.158.01"


def test_unloadable_library_under_driver_root(
    tmp_path: Path, install: Callable[[FakeLib], FakeLib]
) -> None:
    pynvml.nvmlLib = None
    (tmp_path / "lib64").mkdir()
    (tmp_path / "lib64/libnvidia-ml.so.1").write_bytes(b"not an ELF file")
    with pytest.raises(NvmlError, match="cannot load"):
        RealNvml(driver_root=tmp_path).driver_version()


def test_smoke_report_on_the_real_backend(
    install: Callable[[FakeLib], FakeLib], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from computedomain.nvml import smoke

    install(FakeLib())
    assert smoke.main([]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["driverVersion"] == "570.158.01"
    assert doc["deviceCount"] == 2
    assert doc["gpus"][0]["fabric"]["clusterUuid"] == str(CLUSTER)
    assert doc["strict"] == {"cliqueID": f"{CLUSTER}.40"}


def test_smoke_reports_errors_as_json(
    install: Callable[[FakeLib], FakeLib], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from computedomain.nvml import smoke

    install(FakeLib(init_ret=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    assert smoke.main([]) == 1
    assert "nvmlInitWithFlags" in json.loads(capsys.readouterr().out)["error"]
    assert smoke.main(["--backend", "fake", "--fake-profile", "fabric-in-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "IN_PROGRESS" in doc["strict"]["error"]
    assert doc["legacy"] == {"cliqueID": ""}
