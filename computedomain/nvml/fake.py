"""The fake NVML backend: named hardware profiles for tests, the simulation and demos.

Selected with ``--nvml-backend=fake`` / ``NVML_BACKEND=fake``; the profile with
``--fake-nvml-profile`` / ``FAKE_NVML_PROFILE``:

- ``gb200``: a GB200 NVL72 compute tray, four GPUs registered with the fabric in the clique
  given by ``--fake-nvml-clique`` / ``FAKE_NVML_CLIQUE`` (``<cluster UUID>.<clique id>``: the
  rack), so nodes of one simulated rack share a clique;
- ``h100``: an H100 node without multi-node NVLink (fabric query not supported: no clique);
- ``fabric-in-progress``: a GB200 tray whose fabric registration has not finished;
- ``fabric-failure``: a GB200 tray whose fabric registration finished with an error;
- ``mixed-cliques``: a GB200 tray whose GPUs disagree on the clique;
- ``hgx-h100-partition-pending``: a single-node NVLink system (NVSwitches, Fabric Manager in
  shared-NVSwitch mode) whose GPUs wait for their partition (fabric state IN_PROGRESS);
- ``hgx-b200-partition-pending``: the same on a switch-managed NVLink5 node (``SW_MNG`` in an
  InfiniBand device's VPD), fabric state NOT_STARTED.

The two partitioned profiles differ from the others on disk too: the files that tell a node
with a local fabric (:func:`local_fabric_files`; see
docs/compatibility.md#partitioned-fabrics-on-single-node-nvlink-systems).

The profiles are the documents in ``profiles/`` (:mod:`computedomain.nvml.hardware`), written for
:data:`DEFAULT_CLIQUE`; :func:`document` moves one onto another clique. The mock NVML library
serves the same documents through the C ABI. Besides answering the
:class:`~computedomain.nvml.interface.Nvml` calls, a profile describes the driver files a real
node would have (``/proc/devices`` and the ``fabric-imex-mgmt`` capability), so the simulation
can lay them out per node where the plugin looks for them.
"""

from __future__ import annotations

import enum
import functools
import uuid
from pathlib import Path
from typing import Final

import attrs

from computedomain.api.errors import ConfigError
from computedomain.api.validation import clique_id as validate_clique_id
from computedomain.nvml import hardware
from computedomain.nvml.types import Gpu, NvmlError

DEFAULT_CLIQUE: Final = "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.1"
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
    FABRIC_FAILURE = "fabric-failure"
    MIXED_CLIQUES = "mixed-cliques"
    HGX_H100_PARTITION_PENDING = "hgx-h100-partition-pending"
    HGX_B200_PARTITION_PENDING = "hgx-b200-partition-pending"

    @property
    def path(self) -> Path:
        """The profile's document."""
        return hardware.PROFILES_DIR / f"{self.value}.json"


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


@functools.cache
def _stored(profile: Profile) -> hardware.Document:
    return hardware.read(profile.path)


def gpu_uuid(profile: Profile, clique: str, index: int) -> str:
    """A GPU's UUID: stable per (profile, clique, index), distinct across racks."""
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_OID, f'{profile}/{clique}/{index}')}"


def document(profile: Profile, clique: str = DEFAULT_CLIQUE) -> hardware.Document:
    """The profile's document on a node of ``clique``: the stored one moved off DEFAULT_CLIQUE.

    GPUs in the default cluster move to ``clique``'s cluster, their clique IDs keep their offset
    from the default's (so mixed cliques stay mixed), and GPU UUIDs are :func:`gpu_uuid`'s.
    """
    base_cluster, base_id = parse_clique(DEFAULT_CLIQUE)
    cluster, clique_id = parse_clique(clique)
    stored = _stored(profile)
    gpus = []
    for index, gpu in enumerate(stored.gpus):
        info = gpu.fabric
        if info is not None and info.cluster_uuid == base_cluster:
            moved = (info.clique_id - base_id + clique_id) % (hardware.UINT32_MAX + 1)
            info = attrs.evolve(info, cluster_uuid=cluster, clique_id=moved)
        gpus.append(attrs.evolve(gpu, uuid=gpu_uuid(profile, clique, index), fabric=info))
    return attrs.evolve(stored, gpus=tuple(gpus))


def nvml_gpus(doc: hardware.Document) -> tuple[Gpu, ...]:
    """What NVML reports of a document's GPUs through the newest fabric call the driver has.

    Without the versioned call the legacy struct has no health fields; with v2 only, no health
    summary (the real backend's fallbacks read the same).
    """
    versioned = bool(doc.fabric_info_versions)
    summary = 3 in doc.fabric_info_versions
    result = []
    for index, gpu in enumerate(doc.gpus):
        info = gpu.fabric
        if info is not None:
            info = attrs.evolve(
                info,
                health_mask=info.health_mask if versioned else None,
                health_summary=info.health_summary if summary else None,
            )
        result.append(
            Gpu(
                index=index,
                name=gpu.name,
                uuid=gpu.uuid,
                fabric_return=gpu.fabric_return,
                fabric=info,
            )
        )
    return tuple(result)


@attrs.frozen
class FakeNvml:
    """:class:`~computedomain.nvml.interface.Nvml` serving one profile. Thread-safe.

    With ``profile_file`` (``--fake-nvml-profile-file`` / ``FAKE_NVML_PROFILE_FILE``) every call
    reads that profile document afresh, as the mock library reads ``NVML_MOCK_PROFILE`` at each
    ``nvmlInit``: whoever replaces the file atomically changes the node's hardware at runtime (a
    Fabric Manager partition change moving the node to another clique, for instance). A file that
    cannot be read or parsed fails the call with ConfigError naming it. Without it, the named
    ``profile`` on ``clique`` is served (pure).
    """

    profile: Profile = Profile.GB200
    clique: str = DEFAULT_CLIQUE
    profile_file: Path | None = None

    def __attrs_post_init__(self) -> None:
        parse_clique(self.clique)

    def _document(self) -> hardware.Document:
        if self.profile_file is not None:
            doc = hardware.read(self.profile_file)
        else:
            doc = document(self.profile, self.clique)
        if doc.init_return:
            raise NvmlError("nvmlInitWithFlags", doc.init_return)
        return doc

    def driver_version(self) -> str:
        return self._document().driver_version

    def gpus(self) -> tuple[Gpu, ...]:
        return nvml_gpus(self._document())

    @property
    def has_fabric(self) -> bool:
        """Whether this profile's node has the IMEX fabric-management capability (multi-node
        NVLink: the GB200 profiles)."""
        return self.profile not in _SINGLE_NODE


_SINGLE_NODE: Final = frozenset(
    {Profile.H100, Profile.HGX_H100_PARTITION_PENDING, Profile.HGX_B200_PARTITION_PENDING}
)
# An NVSwitch as the nvidia-nvswitch driver lists it (one directory per switch, by PCI address).
NVSWITCH_DEVICE: Final = "/proc/driver/nvidia-nvswitch/devices/0000:05:00.0/information"
# An InfiniBand device's VPD on a switch-managed NVLink5 node: binary, with the SW_MNG keyword.
SWITCH_MANAGED_VPD: Final = "/sys/class/infiniband/mlx5_0/device/vpd"


def local_fabric_files(profile: Profile) -> dict[str, str]:
    """The files by node path that mark ``profile``'s node as having a local NVLink fabric
    (:mod:`computedomain.nvml.localfabric` reads them). Pure."""
    if profile is Profile.HGX_H100_PARTITION_PENDING:
        return {NVSWITCH_DEVICE: "Fabric Manager partitioning: shared NVSwitch\n"}
    if profile is Profile.HGX_B200_PARTITION_PENDING:
        return {SWITCH_MANAGED_VPD: "\x82\x10\x00NVIDIA ConnectX-7\x90\x18\x00PN:SW_MNG\x78\x00"}
    return {}


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
