"""Clique ID discovery: which NVLink clique this node's GPUs belong to
(docs/compatibility.md#clique-id-discovery).

The clique ID is ``<cluster UUID>.<clique id>`` when every GPU with multi-node NVLink agrees on
it, and ``""`` on a node without fabric ("no-clique mode"). Two modes, chosen by the feature gate
``CrashOnNVLinkFabricErrors``:

- **strict** (gate on, the default): a GPU whose fabric registration is not finished or failed
  stops the plugin from starting, so a half-attached node never joins a domain;
- **legacy** (gate off): such a GPU is simply not counted (go-nvlib's ``IsFabricAttached``).

In strict mode on a single-node NVLink system, with the ``FabricManagerPartitioning`` gate on
(``skip_incomplete``), a GPU whose registration is not COMPLETED is skipped instead: its local
Fabric Manager activates partitions on demand, so such a GPU is normal there
(docs/compatibility.md#partitioned-fabrics-on-single-node-nvlink-systems). A skipped GPU adds no
clique; if every GPU is skipped the clique ID is ``""``.

GPUs named "DGX Display" are skipped, GPUs that do not support the query or report a zero
cluster UUID (NVLink-capable but not multi-node) are skipped, and GPUs that disagree are always
fatal. Pure: works on the :class:`~computedomain.nvml.types.Gpu` values a backend returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from computedomain.api.errors import PermanentError
from computedomain.nvml.types import (
    NVML_ERROR_NOT_SUPPORTED,
    NVML_SUCCESS,
    ZERO_UUID,
    FabricInfo,
    FabricState,
    Gpu,
    return_name,
)

DISPLAY_DEVICE_NAMES: Final = frozenset({"DGX Display", "NVIDIA DGX Display"})


class CliqueError(PermanentError):
    """The GPUs' fabric state forbids starting; the message names the GPU and the reason."""


def _state_name(state: int) -> str:
    try:
        return FabricState(state).name
    except ValueError:
        return str(state)


def _strict(gpu: Gpu, *, skip_incomplete: bool = False) -> FabricInfo | None:
    if gpu.fabric_return == NVML_ERROR_NOT_SUPPORTED:
        return None
    if gpu.fabric_return != NVML_SUCCESS or gpu.fabric is None:
        msg = (
            f"error getting the NVLink fabric info of GPU {gpu.index} ({gpu.uuid}): "
            f"{return_name(gpu.fabric_return)}"
        )
        raise CliqueError(msg)
    info = gpu.fabric
    if info.state == FabricState.NOT_SUPPORTED:
        return None
    if info.state != FabricState.COMPLETED:
        if skip_incomplete:
            return None
        msg = (
            f"NVLink fabric not attached for GPU {gpu.index} ({gpu.uuid}): registration state "
            f"{_state_name(info.state)}; refusing to start (set the feature gate "
            "CrashOnNVLinkFabricErrors=false to run without the fabric)"
        )
        raise CliqueError(msg)
    if info.status != NVML_SUCCESS:
        msg = (
            f"NVLink fabric registration error for GPU {gpu.index} ({gpu.uuid}): "
            f"{return_name(info.status)}; refusing to start"
        )
        raise CliqueError(msg)
    if info.cluster_uuid == ZERO_UUID:
        return None
    return info


def _legacy(gpu: Gpu) -> FabricInfo | None:
    if gpu.fabric_return == NVML_ERROR_NOT_SUPPORTED:
        return None
    if gpu.fabric_return != NVML_SUCCESS or gpu.fabric is None:
        msg = (
            f"error getting the NVLink fabric info of GPU {gpu.index} ({gpu.uuid}): "
            f"{return_name(gpu.fabric_return)}"
        )
        raise CliqueError(msg)
    info = gpu.fabric
    attached = (
        info.state == FabricState.COMPLETED
        and info.status == NVML_SUCCESS
        and info.cluster_uuid != ZERO_UUID
    )
    return info if attached else None


def incomplete(gpus: Sequence[Gpu]) -> tuple[Gpu, ...]:
    """The GPUs whose fabric registration is supported but not COMPLETED: those that
    ``skip_incomplete`` skips. Pure."""
    return tuple(
        gpu
        for gpu in gpus
        if gpu.name not in DISPLAY_DEVICE_NAMES
        and gpu.fabric_return == NVML_SUCCESS
        and gpu.fabric is not None
        and gpu.fabric.state not in (FabricState.NOT_SUPPORTED, FabricState.COMPLETED)
    )


def discover(gpus: Sequence[Gpu], *, strict: bool, skip_incomplete: bool = False) -> str:
    """The node's clique ID, or ``""``. Pure; raises CliqueError when starting is refused.

    ``skip_incomplete`` (strict mode only): skip GPUs whose registration is not finished
    instead of refusing (single-node NVLink systems, see the module doc)."""
    recorded: list[tuple[Gpu, FabricInfo]] = []
    for gpu in gpus:
        if gpu.name in DISPLAY_DEVICE_NAMES:
            continue
        info = _strict(gpu, skip_incomplete=skip_incomplete) if strict else _legacy(gpu)
        if info is not None:
            recorded.append((gpu, info))
    if not recorded:
        return ""
    cliques = sorted({info.clique for _, info in recorded})
    if len(cliques) > 1:
        detail = ", ".join(f"GPU {gpu.index}: {info.clique}" for gpu, info in recorded)
        msg = f"the GPUs of this node disagree on their NVLink clique ({detail})"
        raise CliqueError(msg)
    return cliques[0]
