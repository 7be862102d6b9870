"""One hollow node's kubelet plugin: the real ``cd-kubelet-plugin`` parts
(:mod:`computedomain.kubeletplugin.assembly`, as the real plugin builds them), served over their
real gRPC unix sockets, with the cluster view of the shared informers.

Called by :mod:`.kubelet`. Only what differs is supplied here, all for one machine holding
1,152 nodes: the ComputeDomain/clique/pod/Node informers are the process's
:class:`.informers.SharedInformers` (see there why), the Node read-your-writes cache is shared
(keyed by node name, so each node still reads its own Node), the policy registry is the
process's, and there is no gRPC health service nor metrics HTTP server (1,152 more listening
ports, and nothing in the benchmark probes them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import assembly, startup
from computedomain.kubeletplugin import config as cfg
from computedomain.kubeletplugin.grpcservers import PluginServers
from computedomain.kubeletplugin.metrics import Metrics
from computedomain.kubeletplugin.slices import SlicePublisher
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
        metrics = Metrics(config.node_name)
        checked = await assembly.check_node(config, self.api, startup.nvml_for(config), metrics)
        parts = assembly.assemble(
            config,
            self.api,
            checked,
            cluster=self.shared.view(config.node_name),
            node_cache=self.node_cache,
            wakeups=self.shared.wakeups,
            policies=hollow_policies.loaded(),
            metrics=metrics,
        )
        self.servers = parts.servers
        self.slices = parts.slices
        try:
            async with Supervisor(handle_signals=False) as sup:
                try:
                    await parts.serve(sup, informers=(), synced=self.shared.wait_for_sync)
                    self.ready.set()
                    await sup.wait()
                finally:
                    self.ready.clear()
                    await parts.stop()
        finally:
            parts.lock.close()
