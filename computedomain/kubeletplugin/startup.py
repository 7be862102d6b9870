"""What the plugin learns about its node before it serves.

In upstream's order, each failure fatal (the process exits with ``Error: ...``):

1. the plugin data directory and the CDI root exist (created 0750);
2. with the ``IMEXDaemonsWithDNSNames`` gate, the driver is at least 570.158.01 (not with
   host-managed IMEX, where no daemon of ours writes DNS names);
3. the node's clique ID, from NVML's fabric info (strict or legacy by
   ``CrashOnNVLinkFabricErrors``; with ``FabricManagerPartitioning``, first whether the node has
   a local NVLink fabric: :mod:`.cliquesource`);
4. the IMEX channel major from ``/proc/devices`` (``ALT_PROC_DEVICES_PATH``);
5. the base CDI spec ``device=all``: ``nvidia-ctk`` in management mode with the root transform
   where the toolkit is installed (real NVML), else built from the GPUs NVML reports;
6. the nvidia-cdi-hook binary copied into the plugin directory when no path is given and the
   image has one (the generated hooks must name a path that exists on the host).

NVML calls block and run in a thread.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any, Final

import attrs

from computedomain.api.errors import PermanentError
from computedomain.kubeletplugin import basespec, cliquesource
from computedomain.kubeletplugin.cdistore import CdiStore
from computedomain.kubeletplugin.config import Config
from computedomain.nvml import backends, clique, driverversion, localfabric, procdevices
from computedomain.nvml.interface import BackendName, Nvml
from computedomain.runtime import logs

log = logs.get_logger(__name__)

IMAGE_HOOK: Final = Path("/usr/bin/nvidia-cdi-hook")
HOOK_NAME: Final = "nvidia-cdi-hook"


class StartupError(PermanentError):
    """A precondition of the node failed; the message says which and why."""


@attrs.frozen
class Node:
    """The node's facts, fixed for the life of the process."""

    clique_id: str  # at startup; the refresh may change it (cliquerefresh.NodeClique)
    clique_rules: cliquesource.CliqueRules
    channel_major: int
    driver_version: str | None
    gpu_count: int
    base_spec: dict[str, Any]
    hook_path: str


def nvml_for(config: Config) -> Nvml:
    return backends.select(
        config.nvml_backend,
        profile=config.fake_nvml_profile,
        clique=config.fake_nvml_clique,
        profile_file=config.fake_nvml_profile_file,
        driver_root=config.container_driver_root,
    )


def prepare_dirs(config: Config) -> CdiStore:
    """Create the plugin dir and the CDI root; raises StartupError."""
    try:
        config.plugin_dir.mkdir(mode=0o750, parents=True, exist_ok=True)
        config.domains_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        store = CdiStore(config.cdi_root)
        store.ensure_root()
    except OSError as exc:
        raise StartupError(f"preparing directories: {exc}") from exc
    return store


def hook_path(config: Config) -> str:
    """The nvidia-cdi-hook path generated hooks use (copied into PD when not configured)."""
    if config.nvidia_cdi_hook_path:
        return config.nvidia_cdi_hook_path
    target = config.plugin_dir / HOOK_NAME
    if IMAGE_HOOK.is_file():
        shutil.copyfile(IMAGE_HOOK, target)
        target.chmod(0o755)
    return str(target)


def _toolkit(config: Config) -> str | None:
    if config.nvml_backend is not BackendName.REAL:
        return None
    return config.nvidia_ctk_path or shutil.which("nvidia-ctk")


async def discover(config: Config, nvml: Nvml) -> Node:
    """Run the startup checks of the module doc; raises StartupError (or a PermanentError)."""
    try:
        version = None
        if config.features.imex_daemons_with_dns_names and not config.imex.host_managed:
            version = await asyncio.to_thread(nvml.driver_version)
            driverversion.check_dns_names(version)
        rules = await asyncio.to_thread(
            cliquesource.rules_for, config.features, config.container_driver_root
        )
        gpus = await asyncio.to_thread(nvml.gpus)
        clique_id = cliquesource.clique_of(gpus, rules)
    except (
        clique.CliqueError,
        driverversion.DriverVersionError,
        localfabric.LocalFabricError,
    ) as exc:
        raise StartupError(str(exc)) from exc
    except Exception as exc:  # NvmlError and loader failures
        raise StartupError(f"NVML: {exc}") from exc
    try:
        major = procdevices.read_char_major(config.proc_devices, procdevices.IMEX_CHANNELS)
    except procdevices.ProcError as exc:
        raise StartupError(f"error getting nvcap for IMEX channel '0': {exc}") from exc
    hook = await asyncio.to_thread(hook_path, config)
    toolkit = _toolkit(config)
    if toolkit is not None:
        spec = await asyncio.to_thread(
            basespec.generate_with_toolkit,
            toolkit,
            container_driver_root=config.container_driver_root,
            host_driver_root=config.host_driver_root,
            hook_path=hook,
        )
    else:
        if config.nvml_backend is BackendName.REAL:
            log.warning("nvidia-ctk not found: the base CDI spec holds the GPU device nodes only")
        try:
            uvm = procdevices.read_char_major(config.proc_devices, "nvidia-uvm")
        except procdevices.ProcError:
            uvm = 0
        spec = basespec.fake_spec(len(gpus), uvm_major=uvm)
    log.info(
        "node facts",
        clique=clique_id,
        driver=version,
        gpus=len(gpus),
        imex_channel_major=major,
    )
    return Node(
        clique_id=clique_id,
        clique_rules=rules,
        channel_major=major,
        driver_version=version,
        gpu_count=len(gpus),
        base_spec=spec,
        hook_path=hook,
    )
