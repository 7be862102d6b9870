"""cd-kubelet-plugin run under a supervisor: the parts of :mod:`.assembly` over this plugin's
own informers, plus the gRPC health service and the HTTP metrics/health endpoints.

:class:`KubeletPlugin` is what ``main`` runs and what in-process tests start: given a
:class:`~computedomain.kubeletplugin.config.Config` and an API client it

1. checks the node (:mod:`startup`) and writes the base CDI spec;
2. loads the checkpoint for this boot (importing upstream's once, moving a corrupt one aside
   with a Warning event on the Node);
3. starts the informers and waits until they have synced, and only then
4. serves DRA and registers with the kubelet (no call can arrive before the caches are ready);
5. serves gRPC health, HTTP metrics/health, publishes the ResourceSlice and runs the cleanups
   and the clique refresh (whose changes also reach the clique informer's selector).

Stopping (cancel :meth:`KubeletPlugin.run`, or a signal) stops everything in reverse order; the
sockets are removed, the ``nvidia.com/gpu.clique`` label (when enabled) is removed, slices stay
(the kubelet wipes them if the plugin does not come back).
"""

from __future__ import annotations

import asyncio

from computedomain.kube.informer import FuncHandler
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import assembly, startup
from computedomain.kubeletplugin.assembly import COMPONENT
from computedomain.kubeletplugin.checkpointstore import Startup
from computedomain.kubeletplugin.cliquerefresh import CliqueRefresh
from computedomain.kubeletplugin.cluster import InformerCluster
from computedomain.kubeletplugin.config import Config
from computedomain.kubeletplugin.grpcservers import PluginServers
from computedomain.kubeletplugin.health import HealthServer, HealthService
from computedomain.kubeletplugin.metrics import Metrics
from computedomain.kubeletplugin.wakeups import Wakeups
from computedomain.nvml.interface import Nvml
from computedomain.policies import registry
from computedomain.runtime import logs
from computedomain.runtime.httpserver import HttpServer
from computedomain.runtime.supervisor import Supervisor

__all__ = ["COMPONENT", "KubeletPlugin"]

log = logs.get_logger(__name__)


class KubeletPlugin:
    def __init__(self, config: Config, api: Api, *, nvml: Nvml | None = None) -> None:
        self.config = config
        self.api = api
        self.nvml = nvml or startup.nvml_for(config)
        self.metrics = Metrics(config.node_name)
        self.wakeups = Wakeups()
        self.servers: PluginServers | None = None
        self.health: HealthServer | None = None
        self.http: HttpServer | None = None
        self.ready = asyncio.Event()
        self.startup: Startup | None = None
        self.refresh: CliqueRefresh | None = None

    async def run(self, *, handle_signals: bool = True) -> None:
        """Start everything, serve until stopped (signal or cancellation), stop in order.

        Raises PermanentError (startup checks) before serving; FatalError when a critical
        background task fails.
        """
        config = self.config
        checked = await assembly.check_node(config, self.api, self.nvml, self.metrics)
        self.startup = checked.outcome
        cluster = InformerCluster(
            self.api,
            node_name=config.node_name,
            namespace=config.namespace,
            clique_id=checked.node.clique_id,
            wakeups=self.wakeups,
        )
        node_cache = MutationCache(cluster.node.store)
        cluster.node.add_handler(node_cache)
        parts = assembly.assemble(
            config,
            self.api,
            checked,
            cluster=cluster,
            node_cache=node_cache,
            wakeups=self.wakeups,
            policies=registry.load(),
            metrics=self.metrics,
        )
        self.servers = parts.servers
        self.refresh = parts.refresh
        parts.refresh.add_reader(cluster.set_clique)
        # A domain or daemon pod leaving may free a domain directory: clean up now.
        kick = FuncHandler(delete=lambda _: parts.cleanup.kick())
        cluster.domains.add_handler(kick)
        cluster.pods.add_handler(kick)

        async def synced() -> None:
            await asyncio.gather(*(i.wait_for_sync() for i in cluster.informers))

        try:
            async with Supervisor(handle_signals=handle_signals) as sup:
                try:
                    await parts.serve(
                        sup,
                        informers=cluster.informers,
                        synced=synced,
                        extras=lambda: self._start_endpoints(sup, parts.servers, cluster),
                    )
                    self.ready.set()
                    log.info("cd-kubelet-plugin serving", node=config.node_name)
                    await sup.wait()
                finally:
                    self.ready.clear()
                    await parts.stop()
                    if self.health is not None:
                        await self.health.stop()
        finally:
            # Only after the supervisor has cancelled and awaited every task (cleanup holds
            # the lock at times): see NodeLock.close.
            parts.lock.close()

    async def _start_endpoints(
        self, sup: Supervisor, servers: PluginServers, cluster: InformerCluster
    ) -> None:
        """gRPC health and HTTP metrics/health, each when configured."""
        config = self.config
        if config.healthcheck_port >= 0:
            self.health = HealthServer(
                HealthService(
                    registration_socket=config.registration_socket,
                    dra_socket=config.dra_socket,
                    registered=servers.registration.registered,
                ),
                config.health_address,
            )
            await self.health.start()
        if config.http_endpoint:
            self.http = HttpServer(
                config.http_address,
                metrics_path=config.metrics_path,
                registry=self.metrics.registry,
            )
            self.http.add_readiness_check("informers", lambda: cluster.synced)
            self.http.add_readiness_check("registered", servers.registration.registered.is_set)
            sup.start("http", self.http.serve(), critical=False)
