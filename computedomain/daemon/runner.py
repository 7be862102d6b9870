"""``cd-imex-daemon run``: the startup sequence and the supervised parts
(docs/compatibility.md#subcommands-and-exit-codes).

Called by :mod:`computedomain.daemon.main`; wires :mod:`~computedomain.daemon.assembly` (the
registration and file-keeping parts), the :class:`~computedomain.daemon.keeper.ImexKeeper` and
the pod events under one :class:`~computedomain.runtime.supervisor.Supervisor`. Order:

1. (settings and policies checked by :mod:`~computedomain.daemon.main`: exit 2); pick the mode;
2. label the own pod with the clique ID (fatal on failure); with no clique ID, idle until
   SIGTERM (no-op mode);
3. render ``imexd.cfg``, write the mode's static files;
4. run: watches, keeper, IMEX sync, registration loop;
5. on SIGTERM (or a fatal error) stop them newest first, so registration writes stop, then
   ``nvidia-imex`` is stopped, and finally remove the own entry with a fresh 10 s deadline.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

from computedomain.daemon import hostconflict, imexconfig, modes, pod
from computedomain.daemon.assembly import assemble
from computedomain.daemon.config import DaemonConfig
from computedomain.daemon.events import COMPONENT, PodEvents
from computedomain.daemon.indexmemory import IndexMemory
from computedomain.daemon.keeper import ImexKeeper, KeeperTiming, Spawn
from computedomain.daemon.problems import ProblemPublisher
from computedomain.daemon.process import ImexProcess
from computedomain.kube.client import ClientConfig, ClientConfigError, connect
from computedomain.kube.errors import ApiError
from computedomain.kube.events import EventRecorder
from computedomain.kube.rest import Api
from computedomain.policies import registry
from computedomain.runtime import logs
from computedomain.runtime.supervisor import Supervisor

log = logs.get_logger(__name__)

DEREGISTER_WITHIN = 10.0  # upstream's deadline for removing the own entry at shutdown


async def prepare(config: DaemonConfig) -> tuple[Api, modes.Mode]:
    """The mode, the API client and the pod label: everything that may fail before the
    workers start (exit 1 with ``Error: ...``). Raises ClientConfigError, ApiError."""
    mode = modes.select(config.features)
    api = await connect(ClientConfig(kubeconfig=config.kubeconfig, user_agent=COMPONENT))
    try:
        await pod.label_patiently(api, config.identity())
    except BaseException:
        await api.close()
        raise
    return api, mode


async def main(config: DaemonConfig, policies: registry.Policies) -> int:
    """``run`` from start to exit code, with the settings and policies checked by ``main``: 1
    with ``Error: ...`` on stderr when it cannot start."""
    try:
        api, mode = await prepare(config)
    except (ClientConfigError, ApiError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return await run(config, api, mode, policies)


async def run(config: DaemonConfig, api: Api, mode: modes.Mode, policies: registry.Policies) -> int:
    """Run until SIGTERM; 0 after a clean shutdown. Raises FatalError when a part fails."""
    try:
        if not config.clique_id:
            async with Supervisor() as sup:  # handles SIGTERM from here on
                log.info("no cliqueID: skipping controller and IMEX daemon management")
                await sup.wait()
            log.info("Exiting")
            return 0
        return await _run_domain(config, api, mode, policies)
    finally:
        await api.close()


async def _run_domain(
    config: DaemonConfig, api: Api, mode: modes.Mode, policies: registry.Policies
) -> int:
    identity = config.identity()
    dns_policy = policies.dns_names.get(config.dns_name_policy)
    paths = modes.Paths(nodes_config=config.nodes_config_path, hosts_file=config.hosts_file)
    path = await asyncio.to_thread(imexconfig.write_config, config.imexd_dir, pod_ip=config.pod_ip)
    log.info("Rendered IMEX daemon config file", path=str(path), pod_ip=config.pod_ip)
    await asyncio.to_thread(mode.prepare, paths, dns_policy, config.max_nodes)

    recorder = EventRecorder(api, component=COMPONENT, host=identity.node_name)
    context = hostconflict.Context(
        identity.node_name, identity.pod_ip, str(config.hosts_file), str(paths.nodes_config)
    )
    events = PodEvents(recorder, identity, context)

    def current_problem() -> str | None:
        finding = keeper.blocked_by
        if finding is None:
            return None
        return pod.problem_text(str(finding.reason), hostconflict.message(finding, context))

    problems = ProblemPublisher(api, identity, current_problem)

    def blocked_changed() -> None:
        parts.loop.poke()
        problems.poke()

    keeper = ImexKeeper(
        _spawner(config),
        timing=KeeperTiming(reload_interval=config.reload_interval),
        on_finding=events.host_conflict,
        on_blocked_change=blocked_changed,
    )
    parts = assemble(
        api,
        identity,
        mode=mode,
        limit=config.max_nodes,
        index_policy=policies.index.get(config.index_policy),
        dns_policy=dns_policy,
        paths=paths,
        want=keeper.want,
        blocked=lambda: keeper.blocked_by is not None,
        report=events.registration_problem,
        memory=IndexMemory.in_dir(config.imexd_dir),
    )
    log.info("Starting", mode=mode.name, clique=parts.shape.name, node=identity.node_name)
    try:
        async with Supervisor() as sup:
            sup.start("events", recorder.run(), critical=False)
            sup.start("keeper", keeper.run())
            sup.start("problems", problems.run(), critical=False)
            for name, coro in parts.tasks(on_refused=events.refused).items():
                sup.start(name, coro)
            await sup.wait()
    finally:
        await parts.loop.deregister(within=DEREGISTER_WITHIN)
    log.info("Exiting")
    return 0


def _spawner(config: DaemonConfig) -> Spawn:
    argv = [config.imex_binary, "-c", str(config.config_path)]

    def spawn(on_line: Callable[[str], None]) -> Awaitable[ImexProcess]:
        return ImexProcess.spawn(argv, on_line=on_line)

    return spawn
