"""Assembling cd-kubelet-plugin from its parts, and running it under a supervisor.

:class:`KubeletPlugin` is what ``main`` runs and what in-process tests start: given a
:class:`~computedomain.kubeletplugin.config.Config` and an API client it

1. checks the node (:mod:`startup`) and writes the base CDI spec;
2. loads the checkpoint for this boot (importing upstream's once, moving a corrupt one aside
   with a Warning event on the Node);
3. starts the informers and waits until they have synced, and only then
4. serves DRA and registers with the kubelet (no call can arrive before the caches are ready);
5. serves gRPC health, HTTP metrics/health, publishes the ResourceSlice and runs the cleanups.

Stopping (cancel :meth:`KubeletPlugin.run`, or a signal) stops everything in reverse order; the
sockets are removed, slices stay (the kubelet wipes them if the plugin does not come back).
"""

from __future__ import annotations

import asyncio
import time

from computedomain.kube.events import EventRecorder
from computedomain.kube.informer import FuncHandler
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import (
    channelclaims,
    startup,
    strategies,
    upstreamcheckpoint,
)
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin.apiclaims import ClaimReader
from computedomain.kubeletplugin.checkpointstore import CheckpointStore, Startup, read_boot_id
from computedomain.kubeletplugin.cleanup import Cleanup
from computedomain.kubeletplugin.cluster import InformerCluster
from computedomain.kubeletplugin.config import Config
from computedomain.kubeletplugin.driver import Driver
from computedomain.kubeletplugin.grpcservers import PluginServers
from computedomain.kubeletplugin.health import HealthServer, HealthService
from computedomain.kubeletplugin.metrics import Metrics
from computedomain.kubeletplugin.nodelabel import NodeLabeler
from computedomain.kubeletplugin.nodelock import NodeLock
from computedomain.kubeletplugin.slices import SlicePublisher
from computedomain.kubeletplugin.state import DeviceState, NodeFacts
from computedomain.kubeletplugin.waitevents import WaitEvents, corrupt_checkpoint_reporter
from computedomain.kubeletplugin.wakeups import Wakeups
from computedomain.nvml.interface import Nvml
from computedomain.policies import registry
from computedomain.runtime import logs
from computedomain.runtime.httpserver import HttpServer
from computedomain.runtime.supervisor import Supervisor

log = logs.get_logger(__name__)

COMPONENT = "compute-domain-kubelet-plugin"


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

    async def run(self, *, handle_signals: bool = True) -> None:
        """Start everything, serve until stopped (signal or cancellation), stop in order.

        Raises PermanentError (startup checks) before serving; FatalError when a critical
        background task fails.
        """
        config = self.config
        cdi_store = await asyncio.to_thread(startup.prepare_dirs, config)
        node = await startup.discover(config, self.nvml)
        await asyncio.to_thread(cdi_store.write_base, node.base_spec)
        # Events about the node name it; the Node need not exist yet (no startup dependency).
        node_obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": config.node_name}}
        recorder = EventRecorder(self.api, component=COMPONENT, host=config.node_name)
        checkpoints = CheckpointStore(
            config.plugin_dir / cp.FILE_NAME,
            on_corrupt=corrupt_checkpoint_reporter(recorder, node_obj),
        )
        try:
            boot_id = await asyncio.to_thread(read_boot_id, config.boot_id_path)
        except OSError as exc:
            raise startup.StartupError(f"reading the boot ID {config.boot_id_path}: {exc}") from exc
        await asyncio.to_thread(
            checkpoints.import_upstream,
            config.plugin_dir / upstreamcheckpoint.FILE_NAME,
            time.time(),
        )
        loaded = await asyncio.to_thread(checkpoints.load_at_startup, boot_id)
        self.startup = loaded.outcome
        log.info("checkpoint loaded", outcome=str(loaded.outcome), reason=loaded.reason)
        self.metrics.observe_checkpoint(loaded.checkpoint)
        policies = registry.load()
        strategy_for = strategies.resolve(policies.channels, config.channel_strategy_map)

        cluster = InformerCluster(
            self.api,
            node_name=config.node_name,
            namespace=config.namespace,
            clique_id=node.clique_id,
            wakeups=self.wakeups,
        )
        node_cache = MutationCache(cluster.node.store)
        cluster.node.add_handler(node_cache)
        labeler = NodeLabeler(
            self.api,
            config.node_name,
            node_cache,
            lambda uid: channelclaims.domain_ref(d) if (d := cluster.domain(uid)) else None,
        )
        claims = ClaimReader(self.api)
        facts = node_facts(config, node)
        state = DeviceState(
            facts,
            checkpoints=checkpoints,
            cdi_store=cdi_store,
            cluster=cluster,
            labeler=labeler,
            strategy_for=strategy_for,
            wall_clock=time.time,
            on_checkpoint=self.metrics.observe_checkpoint,
        )
        lock = NodeLock(config.lock_path)
        driver = Driver(
            state,
            lock,
            fetch_claim=claims.fetch,
            metrics=self.metrics,
            report_wait=WaitEvents(recorder).report,
            wakeups=self.wakeups,
        )
        self.servers = servers = PluginServers(
            driver,
            dra_socket=config.dra_socket,
            registration_socket=config.registration_socket,
        )
        slices = SlicePublisher(self.api, node_name=config.node_name, clique_id=node.clique_id)
        cleanup = Cleanup(
            state=state,
            lock=lock,
            checkpoints=checkpoints,
            cdi=cdi_store,
            cluster=cluster,
            domains_root=config.domains_dir,
            lookup=claims.lookup,
        )
        # A domain or daemon pod leaving may free a domain directory: clean up now.
        kick = FuncHandler(delete=lambda _: cleanup.kick())
        cluster.domains.add_handler(kick)
        cluster.pods.add_handler(kick)
        try:
            async with Supervisor(handle_signals=handle_signals) as sup:
                try:
                    sup.start("events", recorder.run())
                    for informer in (*cluster.informers, slices.informer):
                        sup.start(f"informer/{informer.name}", informer.run())
                    await asyncio.gather(*(i.wait_for_sync() for i in cluster.informers))
                    await servers.start_dra()
                    await servers.start_registration()
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
                        self.http.add_readiness_check(
                            "registered", servers.registration.registered.is_set
                        )
                        sup.start("http", self.http.serve(), critical=False)
                    sup.start("resourceslices", slices.run())
                    sup.start("cleanup", cleanup.run(config.cleanup_interval), critical=False)
                    self.ready.set()
                    log.info("cd-kubelet-plugin serving", node=config.node_name)
                    await sup.wait()
                finally:
                    self.ready.clear()
                    await servers.stop()
                    if self.health is not None:
                        await self.health.stop()
        finally:
            # Only after the supervisor has cancelled and awaited every task (cleanup holds
            # the lock at times): see NodeLock.close.
            lock.close()


def node_facts(config: Config, node: startup.Node) -> NodeFacts:
    """What prepare needs to know of this node, from the settings and the NVML view. Pure;
    shared with the simulation's hollow nodes so both build it the same way."""
    return NodeFacts(
        node_name=config.node_name,
        clique_id=node.clique_id,
        channel_major=node.channel_major,
        cliques_enabled=config.features.compute_domain_cliques,
        host_paths=config.host_driver_root != config.container_driver_root,
        domains_root=config.domains_dir,
        proc_devices=config.proc_devices,
        fabric_capability=config.fabric_imex_mgmt,
    )
