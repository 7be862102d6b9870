"""One hollow node's kubelet plugin: the real ``cd-kubelet-plugin`` parts, served over its real
gRPC unix sockets, with the cluster view of the shared informers.

Called by :mod:`.kubelet`. The assembly follows
:meth:`computedomain.kubeletplugin.plugin.KubeletPlugin.run` step by step (node checks with the
fake NVML of the node's clique, base CDI spec, checkpoint for this boot, device state, driver,
DRA and registration servers, ResourceSlice publisher, cleanup), with three differences, all for
one machine holding 1,152 nodes: the ComputeDomain/clique/pod/Node informers are the process's
:class:`.informers.SharedInformers` (see there why), the Node read-your-writes cache is shared
(keyed by node name, so each node still reads its own Node), and there is no gRPC health service
nor metrics HTTP server (1,152 more listening ports, and nothing in the benchmark probes them).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from computedomain.kube.events import EventRecorder
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import channelclaims, startup, strategies
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin import config as cfg
from computedomain.kubeletplugin.apiclaims import ClaimReader
from computedomain.kubeletplugin.checkpointstore import CheckpointStore, read_boot_id
from computedomain.kubeletplugin.cleanup import Cleanup
from computedomain.kubeletplugin.driver import Driver
from computedomain.kubeletplugin.grpcservers import PluginServers
from computedomain.kubeletplugin.metrics import Metrics
from computedomain.kubeletplugin.nodelabel import NodeLabeler
from computedomain.kubeletplugin.nodelock import NodeLock
from computedomain.kubeletplugin.plugin import COMPONENT, node_facts
from computedomain.kubeletplugin.slices import SlicePublisher
from computedomain.kubeletplugin.state import DeviceState
from computedomain.kubeletplugin.waitevents import WaitEvents, corrupt_checkpoint_reporter
from computedomain.runtime.supervisor import Supervisor
from computedomain_sim.kubelet.paths import NodePaths

from . import policies as hollow_policies
from .informers import SharedInformers

__all__ = ["HollowPlugin", "plugin_config"]


def plugin_config(
    node_name: str,
    paths: NodePaths,
    *,
    namespace: str,
    profile: str,
    clique: str,
    base_env: Mapping[str, str] | None = None,
) -> cfg.Config:
    """The plugin's configuration for a hollow node whose files live under ``paths``: the
    DaemonSet's plain env (``base_env``) with every path moved under the node's root, fake NVML
    of ``clique``, no health port and no HTTP endpoint. Raises ConfigError."""
    env = dict(base_env or {})
    env.update(
        {
            "NODE_NAME": node_name,
            "NAMESPACE": namespace,
            "CDI_ROOT": str(paths.cdi_dir),
            "KUBELET_REGISTRAR_DIRECTORY_PATH": str(paths.registry_dir),
            "KUBELET_PLUGINS_DIRECTORY_PATH": str(paths.plugins_dir),
            "NVIDIA_DRIVER_ROOT": "/",
            "DRIVER_ROOT_CTR_PATH": str(paths.root),
            "NVIDIA_CDI_HOOK_PATH": "/usr/bin/nvidia-cdi-hook",
            "HEALTHCHECK_PORT": "-1",
            "HTTP_ENDPOINT": "",
            "NVML_BACKEND": "fake",
            "FAKE_NVML_PROFILE": profile,
            "FAKE_NVML_CLIQUE": clique,
            "ALT_PROC_DEVICES_PATH": str(paths.proc_devices_file),
            "BOOT_ID_PATH": str(paths.boot_id_file),
            "KUBECONFIG": "",
        }
    )
    return cfg.parse([], env)


class HollowPlugin:
    """One node's plugin. :meth:`run` until cancelled; :attr:`ready` once it serves."""

    def __init__(
        self, config: cfg.Config, api: Api, shared: SharedInformers, node_cache: MutationCache
    ) -> None:
        self.config = config
        self.api = api
        self.shared = shared
        self.node_cache = node_cache
        self.ready = asyncio.Event()
        self.servers: PluginServers | None = None
        self.slices: SlicePublisher | None = None

    async def run(self) -> None:
        """Start the parts (as the real plugin does), serve until cancelled, stop in order.
        Raises PermanentError from the startup checks; FatalError when a critical part fails."""
        config = self.config
        nvml = startup.nvml_for(config)
        cdi_store = await asyncio.to_thread(startup.prepare_dirs, config)
        node = await startup.discover(config, nvml)
        await asyncio.to_thread(cdi_store.write_base, node.base_spec)
        node_obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": config.node_name}}
        recorder = EventRecorder(self.api, component=COMPONENT, host=config.node_name)
        checkpoints = CheckpointStore(
            config.plugin_dir / cp.FILE_NAME,
            on_corrupt=corrupt_checkpoint_reporter(recorder, node_obj),
        )
        boot_id = await asyncio.to_thread(read_boot_id, config.boot_id_path)
        await asyncio.to_thread(checkpoints.load_at_startup, boot_id)
        metrics = Metrics(config.node_name)
        strategy_for = strategies.resolve(
            hollow_policies.loaded().channels, config.channel_strategy_map
        )
        view = self.shared.view(config.node_name)
        labeler = NodeLabeler(
            self.api,
            config.node_name,
            self.node_cache,
            lambda uid: channelclaims.domain_ref(d) if (d := view.domain(uid)) else None,
        )
        claims = ClaimReader(self.api)
        facts = node_facts(config, node)
        state = DeviceState(
            facts,
            checkpoints=checkpoints,
            cdi_store=cdi_store,
            cluster=view,
            labeler=labeler,
            strategy_for=strategy_for,
            wall_clock=time.time,
            on_checkpoint=metrics.observe_checkpoint,
        )
        lock = NodeLock(config.lock_path)
        driver = Driver(
            state,
            lock,
            fetch_claim=claims.fetch,
            metrics=metrics,
            report_wait=WaitEvents(recorder).report,
            wakeups=self.shared.wakeups,
        )
        self.servers = servers = PluginServers(
            driver, dra_socket=config.dra_socket, registration_socket=config.registration_socket
        )
        self.slices = slices = SlicePublisher(
            self.api, node_name=config.node_name, clique_id=node.clique_id
        )
        cleanup = Cleanup(
            state=state,
            lock=lock,
            checkpoints=checkpoints,
            cdi=cdi_store,
            cluster=view,
            domains_root=config.domains_dir,
            lookup=claims.lookup,
        )
        async with Supervisor(handle_signals=False) as sup:
            try:
                sup.start("events", recorder.run())
                sup.start("informer/resourceslices", slices.informer.run())
                await self.shared.wait_for_sync()
                await servers.start_dra()
                await servers.start_registration()
                sup.start("resourceslices", slices.run())
                sup.start("cleanup", cleanup.run(config.cleanup_interval), critical=False)
                self.ready.set()
                await sup.wait()
            finally:
                self.ready.clear()
                await servers.stop()
                lock.close()
