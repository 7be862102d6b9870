"""Building one kubelet plugin from its parts, and starting them in the order that matters.

Used by :class:`computedomain.kubeletplugin.plugin.KubeletPlugin` (the real program, which adds
its own informers, the gRPC health service and the HTTP endpoints) and by the simulation's hollow
nodes, which run many plugins in one process over shared informers, so that the scale benchmark
measures the assembly we ship. What differs between the two is passed in: the cluster view and
its Node cache, the wake-ups, the policy registry and the informers to run.

Three steps: :func:`check_node` (node checks, base CDI spec, the checkpoint for this boot),
:func:`assemble` (pure construction of the request path: device state, driver, gRPC servers,
ResourceSlice publisher, cleanup, clique refresh) and :meth:`Parts.serve` (informers synced
before the clique label is set, DRA is served and the plugin registers, so no call arrives
before the caches are ready). A caller whose cluster view watches one clique adds it as a
reader of :attr:`Parts.refresh`, so it follows a clique change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable

import attrs

from computedomain.kube.events import EventRecorder
from computedomain.kube.informer import Informer
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import channelclaims, startup, strategies, upstreamcheckpoint
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin.apiclaims import ClaimReader
from computedomain.kubeletplugin.cdistore import CdiStore
from computedomain.kubeletplugin.checkpointstore import CheckpointStore, Startup, read_boot_id
from computedomain.kubeletplugin.cleanup import Cleanup
from computedomain.kubeletplugin.cliquelabel import CliqueLabel
from computedomain.kubeletplugin.cliquerefresh import CliqueRefresh
from computedomain.kubeletplugin.config import Config
from computedomain.kubeletplugin.driver import Driver
from computedomain.kubeletplugin.grpcservers import PluginServers
from computedomain.kubeletplugin.hostchannels import HostChannels
from computedomain.kubeletplugin.hostimex import HostImex
from computedomain.kubeletplugin.hostproblems import DomainAnnotations
from computedomain.kubeletplugin.metrics import Metrics
from computedomain.kubeletplugin.nodelabel import NodeLabeler
from computedomain.kubeletplugin.nodelock import NodeLock
from computedomain.kubeletplugin.ports import ClusterView
from computedomain.kubeletplugin.slices import SlicePublisher
from computedomain.kubeletplugin.state import DeviceState, NodeFacts
from computedomain.kubeletplugin.waitevents import WaitEvents, corrupt_checkpoint_reporter
from computedomain.kubeletplugin.wakeups import Wakeups
from computedomain.nvml.interface import Nvml
from computedomain.policies import registry
from computedomain.runtime import logs
from computedomain.runtime.supervisor import Supervisor

__all__ = ["COMPONENT", "CheckedNode", "Parts", "assemble", "check_node"]

log = logs.get_logger(__name__)

COMPONENT = "compute-domain-kubelet-plugin"


@attrs.frozen
class CheckedNode:
    """What the plugin knows before it builds its parts: the node's NVML view, the CDI store
    holding the base spec, the event recorder and the checkpoint loaded for this boot."""

    node: startup.Node
    cdi_store: CdiStore
    recorder: EventRecorder
    checkpoints: CheckpointStore
    outcome: Startup
    nvml: Nvml


async def check_node(config: Config, api: Api, nvml: Nvml, metrics: Metrics) -> CheckedNode:
    """Check the node, write the base CDI spec, import upstream's checkpoint once and load ours
    for this boot (a corrupt one is moved aside with a Warning event on the Node). Raises
    PermanentError (:class:`~computedomain.kubeletplugin.startup.StartupError`)."""
    cdi_store = await asyncio.to_thread(startup.prepare_dirs, config)
    node = await startup.discover(config, nvml)
    await asyncio.to_thread(cdi_store.write_base, node.base_spec)
    # Events about the node name it; the Node need not exist yet (no startup dependency).
    node_obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": config.node_name}}
    recorder = EventRecorder(api, component=COMPONENT, host=config.node_name)
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
    log.info("checkpoint loaded", outcome=str(loaded.outcome), reason=loaded.reason)
    metrics.observe_checkpoint(loaded.checkpoint)
    return CheckedNode(node, cdi_store, recorder, checkpoints, loaded.outcome, nvml)


@attrs.define
class Parts:
    """One plugin's request path and background work (not started)."""

    recorder: EventRecorder
    state: DeviceState
    lock: NodeLock
    driver: Driver
    servers: PluginServers
    slices: SlicePublisher
    cleanup: Cleanup
    cleanup_interval: float
    refresh: CliqueRefresh
    refresh_interval: float
    label: CliqueLabel | None = None

    async def serve(
        self,
        sup: Supervisor,
        *,
        informers: Iterable[Informer],
        synced: Callable[[], Awaitable[object]],
        extras: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Start events and ``informers`` (and the slice informer) under ``sup``; once
        ``synced`` returns, serve DRA and register with the kubelet; then ``extras`` (the real
        plugin's health and HTTP servers), the ResourceSlice publisher and the cleanups.
        Returns once all is started; :meth:`stop` stops the servers."""
        sup.start("events", self.recorder.run())
        for informer in (*informers, self.slices.informer):
            sup.start(f"informer/{informer.name}", informer.run())
        await synced()
        if self.label is not None:  # upstream's order: after the sync; a failure is fatal
            await self.label.publish(self.refresh.current)
        await self.servers.start_dra()
        await self.servers.start_registration()
        if extras is not None:
            await extras()
        sup.start("resourceslices", self.slices.run())
        sup.start("cleanup", self.cleanup.run(self.cleanup_interval), critical=False)
        sup.start("clique-refresh", self.refresh.run(self.refresh_interval), critical=False)

    async def stop(self) -> None:
        """Stop serving gRPC (the sockets are removed) and remove the clique label. The lock is
        closed by the caller once the supervisor has awaited every task (see
        :meth:`NodeLock.close`)."""
        await self.servers.stop()
        if self.label is not None:
            await self.label.withdraw()


def assemble(
    config: Config,
    api: Api,
    checked: CheckedNode,
    *,
    cluster: ClusterView,
    node_cache: MutationCache,
    wakeups: Wakeups,
    policies: registry.Policies,
    metrics: Metrics,
) -> Parts:
    """Wire one plugin's parts over ``cluster`` (a view the caller keeps synced). Pure
    construction: starts nothing."""
    strategy_for = strategies.resolve(policies.channels, config.channel_strategy_map)
    labeler = NodeLabeler(
        api,
        config.node_name,
        node_cache,
        lambda uid: channelclaims.domain_ref(d) if (d := cluster.domain(uid)) else None,
    )
    claims = ClaimReader(api)
    host = None
    if config.imex.host_managed:
        host = HostChannels(
            node_name=config.node_name,
            clique_id=checked.node.clique_id,
            channel_major=checked.node.channel_major,
            daemon=HostImex(config.container_driver_root, config.imex_host_socket_path),
            problems=DomainAnnotations(api, config.node_name, cluster.domain),
        )
    state = DeviceState(
        _node_facts(config, checked.node),
        checkpoints=checked.checkpoints,
        cdi_store=checked.cdi_store,
        cluster=cluster,
        labeler=labeler,
        strategy_for=strategy_for,
        wall_clock=time.time,
        on_checkpoint=metrics.observe_checkpoint,
        host=host,
    )
    lock = NodeLock(config.lock_path)
    driver = Driver(
        state,
        lock,
        fetch_claim=claims.fetch,
        metrics=metrics,
        report_wait=WaitEvents(checked.recorder).report,
        wakeups=wakeups,
    )
    servers = PluginServers(
        driver, dra_socket=config.dra_socket, registration_socket=config.registration_socket
    )
    slices = SlicePublisher(
        api,
        node_name=config.node_name,
        clique_id=checked.node.clique_id,
        host_managed=config.imex.host_managed,
    )
    label = CliqueLabel(api, config.node_name) if config.gpu_clique_label_enabled else None
    refresh = CliqueRefresh(
        api=api,
        node_name=config.node_name,
        nvml=checked.nvml,
        rules=checked.node.clique_rules,
        initial=checked.node.clique_id,
        lock=lock,
        recorder=checked.recorder,
        label=label,
    )
    refresh.add_reader(state.set_clique)
    refresh.add_reader(slices.set_clique)
    cleanup = Cleanup(
        state=state,
        lock=lock,
        checkpoints=checked.checkpoints,
        cdi=checked.cdi_store,
        cluster=cluster,
        domains_root=config.domains_dir,
        lookup=claims.lookup,
    )
    return Parts(
        checked.recorder,
        state,
        lock,
        driver,
        servers,
        slices,
        cleanup,
        config.cleanup_interval,
        refresh=refresh,
        refresh_interval=config.clique_id_refresh_interval,
        label=label,
    )


def _node_facts(config: Config, node: startup.Node) -> NodeFacts:
    """What prepare needs to know of this node, from the settings and the NVML view. Pure."""
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
