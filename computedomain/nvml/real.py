"""The real NVML backend, on nvidia-ml-py (module ``pynvml``), imported only when used.

Each call initialises NVML with ``INIT_FLAG_NO_GPUS`` (so a node whose GPUs are all unusable
still answers), queries, and shuts NVML down again. Fabric info is read with the versioned call
``nvmlDeviceGetGpuFabricInfoV`` and the v3 struct, falling back to the v2 struct when the driver
answers ``ARGUMENT_VERSION_MISMATCH`` and to the legacy unversioned call when the versioned one
does not exist; every struct is passed with ``byref``. The library is loaded from the
container driver root when found there, as upstream does: it is loaded first, so that when
pynvml asks the dynamic loader for ``libnvidia-ml.so.1`` the loader hands it the object already
loaded under that soname (pynvml's own state is never touched); otherwise pynvml's default
loader searches the usual places. pynvml errors are
translated into :class:`~computedomain.nvml.types.NvmlError` here, at the boundary.
"""

from __future__ import annotations

import ctypes
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, TypeVar

from computedomain.nvml.types import (
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    NVML_ERROR_FUNCTION_NOT_FOUND,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_UNKNOWN,
    NVML_SUCCESS,
    FabricInfo,
    Gpu,
    NvmlError,
)

LIBRARY: Final = "libnvidia-ml.so.1"
# Where upstream looks for the library, each under the container driver root.
LIBRARY_DIRS: Final = (
    "/",
    "/usr/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
)

T = TypeVar("T")


def locate_library(driver_root: Path) -> Path | None:
    """The first ``libnvidia-ml.so.1`` under ``driver_root`` that is a regular file once
    symlinks are resolved (a directory of that name is skipped, as upstream skips it); else
    None."""
    for directory in LIBRARY_DIRS:
        candidate = driver_root / directory.lstrip("/") / LIBRARY
        if candidate.is_file():
            return candidate.resolve()
    return None


def _import_pynvml() -> Any:
    """The pynvml module (untyped, hence Any)."""
    try:
        import pynvml  # noqa: PLC0415 - lazy: hosts without NVIDIA libraries use the fake
    except ImportError as exc:  # pragma: no cover - nvidia-ml-py is a declared dependency
        msg = "the real NVML backend needs nvidia-ml-py (module pynvml)"
        raise NvmlError("import pynvml", NVML_ERROR_LIBRARY_NOT_FOUND, msg) from exc
    return pynvml


class RealNvml:
    """:class:`~computedomain.nvml.interface.Nvml` on the NVIDIA library. Calls block."""

    def __init__(self, *, driver_root: Path | None = None) -> None:
        self.driver_root = driver_root
        self._library: ctypes.CDLL | None = None  # keeps the preloaded library loaded

    def _call(self, nvml: Any, operation: str, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except nvml.NVMLError as exc:
            raise NvmlError(operation, int(getattr(exc, "value", NVML_ERROR_UNKNOWN))) from exc

    def _preload(self) -> None:
        """Load the driver root's library (once) before pynvml loads ``libnvidia-ml.so.1``."""
        if self.driver_root is None or self._library is not None:
            return
        path = locate_library(self.driver_root)
        if path is None:
            return
        try:
            self._library = ctypes.CDLL(str(path))
        except OSError as exc:
            detail = f"cannot load {path}: {exc}"
            raise NvmlError("load library", NVML_ERROR_LIBRARY_NOT_FOUND, detail) from exc

    @contextmanager
    def _session(self) -> Iterator[Any]:
        self._preload()
        nvml = _import_pynvml()
        self._call(nvml, "nvmlInitWithFlags", nvml.nvmlInitWithFlags, nvml.NVML_INIT_FLAG_NO_GPUS)
        try:
            yield nvml
        finally:
            self._call(nvml, "nvmlShutdown", nvml.nvmlShutdown)

    def driver_version(self) -> str:
        with self._session() as nvml:
            version = self._call(
                nvml, "nvmlSystemGetDriverVersion", nvml.nvmlSystemGetDriverVersion
            )
        return str(version)

    def gpus(self) -> tuple[Gpu, ...]:
        with self._session() as nvml:
            count = self._call(nvml, "nvmlDeviceGetCount", nvml.nvmlDeviceGetCount)
            result = []
            for index in range(int(count)):
                handle = self._call(
                    nvml, "nvmlDeviceGetHandleByIndex", nvml.nvmlDeviceGetHandleByIndex, index
                )
                name = self._call(nvml, "nvmlDeviceGetName", nvml.nvmlDeviceGetName, handle)
                gpu_uuid = self._call(nvml, "nvmlDeviceGetUUID", nvml.nvmlDeviceGetUUID, handle)
                code, info = self._fabric(nvml, handle)
                result.append(
                    Gpu(
                        index=index,
                        name=str(name),
                        uuid=str(gpu_uuid),
                        fabric_return=code,
                        fabric=info,
                    )
                )
        return tuple(result)

    def _fabric(self, nvml: Any, handle: Any) -> tuple[int, FabricInfo | None]:
        """(nvmlReturn_t, info) of the newest fabric-info call the driver supports."""
        attempts: tuple[tuple[str, Callable[[], Any]], ...] = (
            ("nvmlDeviceGetGpuFabricInfoV", nvml.c_nvmlGpuFabricInfo_v3_t),
            ("nvmlDeviceGetGpuFabricInfoV", nvml.c_nvmlGpuFabricInfo_v2_t),
            ("nvmlDeviceGetGpuFabricInfo", nvml.c_nvmlGpuFabricInfo_t),
        )
        code = NVML_ERROR_FUNCTION_NOT_FOUND
        for function, struct_type in attempts:
            struct = struct_type()
            try:
                getattr(nvml, function)(handle, ctypes.byref(struct))
            except nvml.NVMLError as exc:
                code = int(getattr(exc, "value", NVML_ERROR_UNKNOWN))
                if code in (NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_FUNCTION_NOT_FOUND):
                    continue
                return code, None
            return NVML_SUCCESS, _decode(struct)
        return code, None


def _decode(struct: Any) -> FabricInfo:
    """A FabricInfo from any of the three ctypes structs."""
    names = {field[0] for field in struct._fields_}
    return FabricInfo(
        cluster_uuid=uuid.UUID(bytes=bytes(struct.clusterUuid)),
        clique_id=int(struct.cliqueId),
        state=int(struct.state),
        status=int(struct.status),
        health_mask=int(struct.healthMask) if "healthMask" in names else None,
        health_summary=int(struct.healthSummary) if "healthSummary" in names else None,
    )
