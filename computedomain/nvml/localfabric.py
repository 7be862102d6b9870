"""Does this node have its own NVLink fabric (a single-node NVLink system)?

Asked once at startup when the ``FabricManagerPartitioning`` gate is on
(docs/compatibility.md#partitioned-fabrics-on-single-node-nvlink-systems). On such a node the
local Fabric Manager may keep GPUs' fabric registration unfinished until their partition is
activated, so clique discovery skips those GPUs instead of refusing to start.

A node has a local fabric when, under its dev root, ``proc/driver/nvidia-nvswitch/devices`` is
a directory with at least one entry (NVSwitches), or else when any
``sys/class/infiniband/*/device/vpd`` contains the bytes ``SW_MNG`` (switch-managed NVLink5).
A missing path means no; any other read error raises :class:`LocalFabricError`, since guessing
either way would hide a broken mount. Blocking (run it in a thread).
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Final

from computedomain.api.errors import PermanentError

NVSWITCH_DEVICES: Final = "proc/driver/nvidia-nvswitch/devices"
INFINIBAND_DEVICES: Final = "sys/class/infiniband"
VPD: Final = "device/vpd"
SWITCH_MANAGED: Final = b"SW_MNG"

# Errors that mean "this path is not there" rather than "it could not be read".
_ABSENT: Final = frozenset({errno.ENOENT, errno.ENOTDIR})


class LocalFabricError(PermanentError):
    """The files that tell a local fabric could not be read; the message names the path."""


def _entries(directory: Path) -> list[str] | None:
    """The directory's entry names (sorted), or None when it does not exist."""
    try:
        return sorted(p.name for p in directory.iterdir())
    except OSError as exc:
        if exc.errno in _ABSENT:
            return None
        raise _error(directory, exc) from exc


def _error(path: Path, exc: OSError) -> LocalFabricError:
    return LocalFabricError(
        "error checking if node is single-node NVLink system: failed to check if node has "
        f"local fabric: {path}: {exc.strerror or exc}"
    )


def has_nvswitches(dev_root: Path) -> bool:
    """Whether the nvidia-nvswitch driver lists a switch under ``dev_root``."""
    return bool(_entries(dev_root / NVSWITCH_DEVICES))


def has_switch_managed_nvlink(dev_root: Path) -> bool:
    """Whether an InfiniBand device's VPD under ``dev_root`` carries ``SW_MNG``."""
    base = dev_root / INFINIBAND_DEVICES
    for name in _entries(base) or ():
        vpd = base / name / VPD
        try:
            data = vpd.read_bytes()
        except OSError as exc:
            if exc.errno in _ABSENT:
                continue
            raise _error(vpd, exc) from exc
        if SWITCH_MANAGED in data:
            return True
    return False


def has_local_fabric(dev_root: Path) -> bool:
    """NVSwitches first, then switch-managed NVLink5 (the module doc). Raises
    LocalFabricError."""
    return has_nvswitches(dev_root) or has_switch_managed_nvlink(dev_root)
