"""Daemon claims: what the per-node IMEX daemon of a ComputeDomain gets.

The contract: docs/compatibility.md#daemon-claims.

For a ``ComputeDomainDaemonConfig`` the plugin, in this order:

1. creates the domain directory ``<plugins dir>/compute-domain.nvidia.com/domains/<cd uid>/``
   (0755) and writes ``imexd.cfg.tmpl`` into it: upstream's nvidia-imex settings with the two
   placeholders the daemon fills in (docs/compatibility.md#imex-configuration-and-ports). The
   directory is mounted at ``/imexd``; files the daemon writes there survive container restarts.
   Unprepare leaves it (a new daemon pod of the same domain may already use it); cleanup removes it
   once the domain is gone;
2. returns the container edits: ``CLIQUE_ID``, ``COMPUTE_DOMAIN_UUID|NAME|NAMESPACE`` (in that
   order), the ``/imexd`` bind mount, and, on a node with a clique, the fabric-management
   device node (``/dev/nvidia-caps/nvidia-cap<minor>``; minor and mode from the
   ``fabric-imex-mgmt`` capability file, major of ``nvidia-caps``).

Daemon claims touch no label and wait for nothing. The pure parts (:func:`edits`) are separate
from the file work (:func:`ensure_domain_dir`, :func:`fabric_node`).
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Final

import attrs

from computedomain.api import names, validation
from computedomain.kubeletplugin.cdi import MOUNT_OPTIONS, ContainerEdits, DeviceNode, Mount
from computedomain.nvml import procdevices
from computedomain.runtime import files

TEMPLATE_RESOURCE: Final = "imexd.cfg.tmpl"


@attrs.frozen
class Domain:
    """The identity of a ComputeDomain, as the daemon's environment carries it."""

    uid: str
    name: str
    namespace: str


@functools.cache
def template_bytes() -> bytes:
    """The ``imexd.cfg.tmpl`` shipped with the package (read once)."""
    return resources.files(__package__).joinpath(TEMPLATE_RESOURCE).read_bytes()


def domain_dir(domains_root: Path, domain_id: str) -> Path:
    """``<domains root>/<domain id>``; the id must be one safe path component (ConfigError)."""
    return domains_root / validation.safe_path_component("domainID", domain_id)


def ensure_domain_dir(domains_root: Path, domain_id: str) -> Path:
    """Create the directory and (re)write the template when it differs. Idempotent; OSError.

    Not fsynced: the prepare that calls this compares the bytes every time, so a file a power
    loss tore is rewritten by the next prepare of the claim (after a reboot, every claim is
    prepared again), and this runs on the plugin's event loop (:mod:`.state`)."""
    directory = domain_dir(domains_root, domain_id)
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    target = directory / names.IMEXD_CONFIG_TEMPLATE
    wanted = template_bytes()
    try:
        current = target.read_bytes()
    except FileNotFoundError:
        current = None
    if current != wanted:
        files.atomic_write(target, wanted, mode=0o644, durable=False)
    return directory


def fabric_node(proc_devices: Path, capability: Path) -> DeviceNode:
    """The fabric-management device node; raises ProcError (retryable) when facts are missing."""
    cap = procdevices.read_capability(capability)
    major = procdevices.read_char_major(proc_devices, procdevices.NVIDIA_CAPS)
    return DeviceNode(path=cap.device_path(), major=major, minor=cap.minor, file_mode=cap.mode)


def edits(
    domain: Domain, clique_id: str, host_dir: Path, fabric: DeviceNode | None
) -> ContainerEdits:
    """The daemon container's edits. Pure."""
    return ContainerEdits(
        env=(
            f"{names.ENV_CLIQUE_ID}={clique_id}",
            f"{names.ENV_COMPUTE_DOMAIN_UUID}={domain.uid}",
            f"{names.ENV_COMPUTE_DOMAIN_NAME}={domain.name}",
            f"{names.ENV_COMPUTE_DOMAIN_NAMESPACE}={domain.namespace}",
        ),
        device_nodes=(fabric,) if fabric is not None else (),
        mounts=(
            Mount(
                host_path=str(host_dir),
                container_path=names.IMEXD_DIR,
                options=MOUNT_OPTIONS,
            ),
        ),
    )
