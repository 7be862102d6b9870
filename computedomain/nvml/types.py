"""Values the NVML interface returns: GPUs, their fabric info, NVML return codes and errors.

Both backends (:mod:`computedomain.nvml.real` on nvidia-ml-py, :mod:`computedomain.nvml.fake`
with named profiles) produce these frozen values, and the pure functions that interpret them
(:mod:`computedomain.nvml.clique`, :mod:`computedomain.nvml.driverversion`) consume them, so the
interpretation is tested once against every profile. The numbers are NVML's own
(``nvmlReturn_t``, ``nvmlGpuFabricState_t``).
"""

from __future__ import annotations

import enum
import uuid
from typing import Final

import attrs

# nvmlReturn_t values the plugin reasons about.
NVML_SUCCESS: Final = 0
NVML_ERROR_UNINITIALIZED: Final = 1
NVML_ERROR_NOT_SUPPORTED: Final = 3
NVML_ERROR_NOT_FOUND: Final = 6
NVML_ERROR_LIBRARY_NOT_FOUND: Final = 12
NVML_ERROR_FUNCTION_NOT_FOUND: Final = 13
NVML_ERROR_ARGUMENT_VERSION_MISMATCH: Final = 25
NVML_ERROR_UNKNOWN: Final = 999

_RETURN_NAMES: Final = {
    NVML_SUCCESS: "SUCCESS",
    NVML_ERROR_UNINITIALIZED: "ERROR_UNINITIALIZED",
    NVML_ERROR_NOT_SUPPORTED: "ERROR_NOT_SUPPORTED",
    NVML_ERROR_NOT_FOUND: "ERROR_NOT_FOUND",
    NVML_ERROR_LIBRARY_NOT_FOUND: "ERROR_LIBRARY_NOT_FOUND",
    NVML_ERROR_FUNCTION_NOT_FOUND: "ERROR_FUNCTION_NOT_FOUND",
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH: "ERROR_ARGUMENT_VERSION_MISMATCH",
    NVML_ERROR_UNKNOWN: "ERROR_UNKNOWN",
}

ZERO_UUID: Final = uuid.UUID(int=0)


def return_name(code: int) -> str:
    """``ERROR_NOT_SUPPORTED`` for 3, ``nvmlReturn(<n>)`` for codes we do not name."""
    return _RETURN_NAMES.get(code, f"nvmlReturn({code})")


class FabricState(enum.IntEnum):
    """``nvmlGpuFabricState_t``."""

    NOT_SUPPORTED = 0
    NOT_STARTED = 1
    IN_PROGRESS = 2
    COMPLETED = 3


class NvmlError(Exception):
    """An NVML call failed; ``code`` is the nvmlReturn_t value, ``operation`` the call."""

    def __init__(self, operation: str, code: int, detail: str = "") -> None:
        self.operation = operation
        self.code = code
        text = detail or return_name(code)
        super().__init__(f"{operation}: {text}")


@attrs.frozen
class FabricInfo:
    """``nvmlGpuFabricInfo`` of one GPU (any struct version)."""

    cluster_uuid: uuid.UUID
    clique_id: int
    state: int  # FabricState value, kept as int: drivers may report values we do not know
    status: int  # nvmlReturn_t of the fabric registration
    health_mask: int | None = None  # v2 and later
    health_summary: int | None = None  # v3 and later

    @property
    def clique(self) -> str:
        """``<lowercase cluster UUID>.<decimal clique id>`` (upstream's clique ID format)."""
        return f"{self.cluster_uuid}.{self.clique_id}"


@attrs.frozen
class Gpu:
    """One GPU as NVML enumerates it, with the outcome of its fabric-info query."""

    index: int
    name: str
    uuid: str
    # nvmlReturn_t of the fabric-info call; ``fabric`` is set only when it is NVML_SUCCESS.
    fabric_return: int = NVML_SUCCESS
    fabric: FabricInfo | None = None
