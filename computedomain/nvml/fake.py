"""The fake NVML backend: named hardware profiles for tests, the simulation and demos.

Selected with ``--nvml-backend=fake`` / ``NVML_BACKEND=fake``; the profile with
``--fake-nvml-profile`` / ``FAKE_NVML_PROFILE``:

- ``gb200``: a GB200 NVL72 compute tray, four GPUs registered with the fabric in the clique
  given by ``--fake-nvml-clique`` / ``FAKE_NVML_CLIQUE`` (``<cluster UUID>.<clique id>``: the
  rack), so nodes of one simulated rack share a clique;
- ``h100``: an H100 node without multi-node NVLink (fabric query not supported: no clique);
- ``fabric-in-progress``: a GB200 tray whose fabric registration has not finished;
- ``mixed-cliques``: a GB200 tray whose GPUs disagree on the clique.

Besides answering the :class:`~computedomain.nvml.interface.Nvml` calls, a profile describes
the driver files a real node would have (``/proc/devices`` and the ``fabric-imex-mgmt``
capability), so the simulation can lay them out per node where the plugin looks for them.
"""

from __future__ import annotations

import enum
import uuid
from typing import Final

import attrs

from computedomain.api.errors import ConfigError
from computedomain.api.validation import clique_id as validate_clique_id
from computedomain.nvml.types import (
    NVML_ERROR_NOT_SUPPORTED,
    NVML_SUCCESS,
    FabricInfo,
    FabricState,
    Gpu,
)

DEFAULT_CLIQUE: Final = "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.1"
GB200_DRIVER: Final = "580.95.05"
H100_DRIVER: Final = "570.172.08"
# Character-device majors as a typical NVIDIA host has them (the exact numbers are dynamic).
PROC_DEVICES_MAJORS: Final = (
    (195, "nvidia-frontend"),
    (234, "nvidia-caps-imex-channels"),
    (235, "nvidia-caps"),
    (507, "nvidia-uvm"),
    (508, "nvidia-nvlink"),
)
FABRIC_IMEX_MGMT_MINOR: Final = 1
FABRIC_IMEX_MGMT_MODE: Final = 256  # 0o400, as the driver creates it


class Profile(enum.StrEnum):
    """``--fake-nvml-profile`` / ``FAKE_NVML_PROFILE``."""

    GB200 = "gb200"
    H100 = "h100"
    FABRIC_IN_PROGRESS = "fabric-in-progress"
    MIXED_CLIQUES = "mixed-cliques"


def parse_profile(value: str, *, setting: str = "FAKE_NVML_PROFILE") -> Profile:
    """The profile named ``value``; ConfigError listing the valid names otherwise."""
    try:
        return Profile(value)
    except ValueError:
        valid = ", ".join(p.value for p in Profile)
        raise ConfigError(setting, f"unknown profile {value!r} (valid: {valid})") from None


def parse_clique(value: str, *, setting: str = "FAKE_NVML_CLIQUE") -> tuple[uuid.UUID, int]:
    """``<cluster UUID>.<clique id>`` -> (UUID, id); ConfigError naming ``setting``."""
    if not value:
        raise ConfigError(setting, "must not be empty (want '<cluster UUID>.<clique id>')")
    validate_clique_id(setting, value)
    cluster, _, clique = value.rpartition(".")
    try:
        cluster_uuid = uuid.UUID(cluster)
    except ValueError:
        raise ConfigError(setting, f"{cluster!r} is not a UUID") from None
    if cluster_uuid.int == 0:
        raise ConfigError(setting, "the cluster UUID must not be all zeros")
    return cluster_uuid, int(clique)


@attrs.frozen
class FakeNvml:
    """:class:`~computedomain.nvml.interface.Nvml` serving one profile. Pure and thread-safe."""

    profile: Profile = Profile.GB200
    clique: str = DEFAULT_CLIQUE
    gpu_count: int = 4

    def __attrs_post_init__(self) -> None:
        parse_clique(self.clique)

    def driver_version(self) -> str:
        return H100_DRIVER if self.profile is Profile.H100 else GB200_DRIVER

    def gpus(self) -> tuple[Gpu, ...]:
        cluster_uuid, clique_id = parse_clique(self.clique)
        if self.profile is Profile.H100:
            return tuple(
                Gpu(
                    index=i,
                    name="NVIDIA H100 80GB HBM3",
                    uuid=self._gpu_uuid(i),
                    fabric_return=NVML_ERROR_NOT_SUPPORTED,
                )
                for i in range(8)
            )
        state = (
            FabricState.IN_PROGRESS
            if self.profile is Profile.FABRIC_IN_PROGRESS
            else FabricState.COMPLETED
        )
        result = []
        for i in range(self.gpu_count):
            own_clique = clique_id
            if self.profile is Profile.MIXED_CLIQUES and i >= self.gpu_count // 2:
                own_clique = clique_id + 1
            result.append(
                Gpu(
                    index=i,
                    name="NVIDIA GB200",
                    uuid=self._gpu_uuid(i),
                    fabric=FabricInfo(
                        cluster_uuid=cluster_uuid,
                        clique_id=own_clique,
                        state=int(state),
                        status=NVML_SUCCESS,
                        health_mask=0,
                        health_summary=1,
                    ),
                )
            )
        return tuple(result)

    def _gpu_uuid(self, index: int) -> str:
        # Stable per (profile, clique, index), distinct across racks of a simulated cluster.
        return f"GPU-{uuid.uuid5(uuid.NAMESPACE_OID, f'{self.profile}/{self.clique}/{index}')}"

    @property
    def has_fabric(self) -> bool:
        """Whether this profile's node has the IMEX fabric-management capability."""
        return self.profile is not Profile.H100


def proc_devices_text() -> str:
    """A ``/proc/devices`` with the NVIDIA character devices the plugin looks up."""
    lines = ["Character devices:", "  1 mem", "  4 /dev/vc/0", "  5 /dev/tty"]
    lines += [f"{major:3d} {name}" for major, name in PROC_DEVICES_MAJORS]
    lines += ["", "Block devices:", "  8 sd", "259 blkext", ""]
    return "\n".join(lines)


def fabric_imex_mgmt_text() -> str:
    """The ``/proc/driver/nvidia/capabilities/fabric-imex-mgmt`` file of a GB200 host."""
    return (
        f"DeviceFileMinor: {FABRIC_IMEX_MGMT_MINOR}\n"
        f"DeviceFileMode: {FABRIC_IMEX_MGMT_MODE}\n"
        "DeviceFileModify: 1\n"
    )
