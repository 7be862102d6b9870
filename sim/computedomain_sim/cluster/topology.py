"""The simulated machines: how many nodes, in which racks, with which fake hardware.

Called by :mod:`.cluster`. Pure. Each rack is one NVLink domain: its nodes share a clique
(``<cluster UUID>.<rack>``) and carry the labels a GPU node has (``nvidia.com/gpu.present``, the
GPU Feature Discovery clique label) plus the rack. The driver files of the profile
(``/proc/devices``, with a fabric the ``fabric-imex-mgmt`` capability the kubelet plugin
reads for daemon claims, on a single-node NVLink system the files that say so) go on every
node. The NVML the plugin sees is the node's hardware too:
the fake backend (``NVML_BACKEND=fake``) or, with ``nvml_backend`` real, the mock NVML library
under the node's driver root (:mod:`computedomain_sim.nvmlmock`) and the plugin's own default,
the real backend. Either reads the node's profile document (the profile on the rack's clique)
from the node's driver root at every query (``FAKE_NVML_PROFILE_FILE``,
``NVML_MOCK_PROFILE``), so replacing that file (:func:`computedomain_sim.nvmlmock.write_profile`)
changes the node's hardware at runtime, as a Fabric Manager partition change does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import attrs

from computedomain.api import names
from computedomain.nvml import fake
from computedomain_sim import nvmlmock
from computedomain_sim.kubelet.node import NodeConfig

__all__ = [
    "CLIQUE_LABEL",
    "RACK_LABEL",
    "Topology",
    "driver_files",
    "nodes",
    "nvml_environment",
]

RACK_LABEL = "computedomain.sim/rack"
CLIQUE_LABEL = "nvidia.com/gpu.clique"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
_NAMESPACE = uuid.UUID("4f1d7c8e-2b6a-4e55-9c3d-0a1b2c3d4e5f")
# Where the plugin's DaemonSet mounts the node's driver root (the host's /).
DRIVER_ROOT_MOUNT = "/driver-root"


@attrs.frozen
class Topology:
    """``racks`` racks of ``nodes_per_rack`` nodes, all with hardware ``profile``, whose
    plugins reach it through ``nvml_backend``."""

    racks: int = 2
    nodes_per_rack: int = 2
    profile: str = "gb200"
    seed: str = "computedomain-sim"
    nvml_backend: nvmlmock.NvmlBackend = nvmlmock.NvmlBackend.FAKE

    def __attrs_post_init__(self) -> None:
        if self.racks < 1 or self.nodes_per_rack < 1:
            msg = (
                "racks and nodes per rack must be at least 1 "
                f"(got {self.racks}x{self.nodes_per_rack})"
            )
            raise ValueError(msg)
        if self.racks * self.nodes_per_rack > 254:
            msg = "at most 254 nodes per simulated cluster"
            raise ValueError(msg)

    @property
    def cluster_uuid(self) -> str:
        return str(uuid.uuid5(_NAMESPACE, self.seed))

    def clique(self, rack: int) -> str:
        """The NVLink clique of ``rack``: ``<cluster UUID>.<rack>``."""
        return f"{self.cluster_uuid}.{rack}"


def driver_files(profile: str) -> dict[str, str]:
    """The driver's files on a node of ``profile``, by node path. Pure; raises ConfigError (a
    ValueError) for an unknown profile."""
    chosen = fake.parse_profile(profile)
    files = fake.local_fabric_files(chosen)
    if fake.FakeNvml(chosen).has_fabric:
        files[names.FABRIC_IMEX_MGMT_PATH] = fake.fabric_imex_mgmt_text()
    return files


def nvml_environment(topology: Topology, clique: str) -> dict[str, str]:
    """The node env that selects the plugin's NVML (see the module doc). Pure."""
    document = DRIVER_ROOT_MOUNT + nvmlmock.PROFILE_NODE_PATH
    if topology.nvml_backend is nvmlmock.NvmlBackend.REAL:
        return {"NVML_MOCK_PROFILE": document}
    return {
        "NVML_BACKEND": "fake",
        "FAKE_NVML_PROFILE": topology.profile,
        "FAKE_NVML_CLIQUE": clique,
        "FAKE_NVML_PROFILE_FILE": document,
    }


def nodes(topology: Topology, address_of: Callable[[int], str]) -> list[NodeConfig]:
    """The node configs, rack by rack (``r<rack>n<index>``). Pure given ``address_of``."""
    files = driver_files(topology.profile)
    real = topology.nvml_backend is nvmlmock.NvmlBackend.REAL
    out: list[NodeConfig] = []
    for rack in range(topology.racks):
        clique = topology.clique(rack)
        rack_files = dict(files)
        rack_files[nvmlmock.PROFILE_NODE_PATH] = nvmlmock.profile_text(topology.profile, clique)
        for index in range(topology.nodes_per_rack):
            name = f"r{rack}n{index}"
            out.append(
                NodeConfig(
                    name=name,
                    address=address_of(len(out)),
                    labels={
                        GPU_PRESENT_LABEL: "true",
                        CLIQUE_LABEL: clique,
                        RACK_LABEL: f"r{rack}",
                    },
                    env=nvml_environment(topology, clique),
                    proc_devices=fake.proc_devices_text(),
                    driver_files=rack_files,
                    driver_links={nvmlmock.LIBRARY_NODE_PATH: nvmlmock.LIBRARY} if real else {},
                )
            )
    return out
