"""Membership invariants (S1-S9, F2, F5, F7, F9, P1, P3 of
docs/compatibility.md#membership-invariants) under random interleavings.

Several in-process daemons (the real registration loop, watches, hosts-file sync and keeper,
each daemon with its own API client) run against the embedded API server with real
compare-and-swap, in one or two cliques, in clique mode and in status mode. Hypothesis draws a
program of joins, graceful leaves, forced leaves (the controller's cleanup removes the entry),
pod replacements with a new IP, container restarts and readiness flips, executed without
waiting for each other; then the test waits for quiescence and checks the invariants, plus a
history of every version of the membership objects (S5, S6). It runs for every policy in the
``computedomain`` entry-point group; a broken index policy is shown to fail it.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.api.models import DaemonInfo, Status
from computedomain.daemon import hostsfile, modes
from computedomain.daemon.identity import Identity
from computedomain.daemon.keeper import KeeperTiming
from computedomain.daemon.process import ImexProcess
from computedomain.daemon.shapes import Shape
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.kube.rest import Api
from computedomain.policies import registry
from computedomain.policies.hookspecs import DnsNamePolicy, IndexPolicy, IndexRequest, hookimpl
from computedomain_sim.apiserver import testing
from computedomain_sim.imex.hollow import HollowDaemon
from tests.integration.daemon.cluster import Cluster, clique_id, random_cd_uid
from tests.support.clusters import crd_server
from tests.support.polling import eventually

SETTINGS = settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
POLICIES = registry.load()
LOWEST_FREE = "lowest-free"
LIMIT = 4
TIMING = KeeperTiming(reload_interval=0.05, restart_initial=0.05, stop_timeout=2.0)
# A child that ignores SIGUSR1 (the disposition survives exec) and dies on SIGTERM.
CHILD = ["sh", "-c", 'trap "" USR1; exec sleep 100000']
ACTIONS = ("join", "leave", "kill", "replace", "restart", "ready", "unready", "cleanup")
_numbers = itertools.count(1)

Program = tuple[list[int], list[tuple[str, int]], int]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    with crd_server(tmp_path_factory.mktemp("apiserver")) as running:
        yield running


@attrs.frozen
class Case:
    """Which mode and policies one run of the suite uses."""

    mode: modes.Mode
    index: str = "lowest-free"
    dns: str = "upstream"

    @property
    def id(self) -> str:
        return f"{self.mode.name}-{self.index}-{self.dns}"


@attrs.define
class Node:
    name: str
    clique: str
    pod: str = ""
    pod_uid: str = ""
    ip: str = ""
    ready: bool = False
    daemon: HollowDaemon | None = None
    generation: int = 0
    starts_with_own_mapping: list[bool] = attrs.field(factory=list)


class Scenario:
    """One example: a domain, its nodes, the daemons, and what the test may see removed."""

    def __init__(
        self, server: testing.RunningServer, tmp: Path, case: Case, policy: IndexPolicy
    ) -> None:
        self.server = server
        self.tmp = tmp
        self.mode = case.mode
        self.policy = policy
        self.dns: DnsNamePolicy = POLICIES.dns_names.get(case.dns)
        self.namespace = testing.unique_name("cd")
        self.cd_name = "cd"
        self.cd_uid = ""
        self.nodes: list[Node] = []
        self.shapes: dict[str, Shape] = {}
        self.allowed_removals: set[tuple[str, str]] = set()  # (node, pod UID or "*")
        self.history: list[tuple[str, dict[str, Any] | None]] = []
        self.watch_tasks: list[asyncio.Task[None]] = []

    async def setup(self, api: Api, cliques: Sequence[int]) -> None:
        self.api = api
        self.cluster = Cluster(api, self.namespace)
        await self.cluster.create_namespace()
        if self.mode is modes.CLIQUES:
            self.cd_uid = random_cd_uid()
        else:
            self.cd_uid = await self.cluster.create_compute_domain(self.cd_name)
        self.nodes = [Node(f"node-{i}", clique_id(c)) for i, c in enumerate(cliques)]
        for node in self.nodes:
            self.shapes[node.clique] = self.mode.shape(self.identity(node), LIMIT)
        watchers = [self._watch(shape) for shape in self.distinct_shapes()]
        self.watch_tasks = [asyncio.create_task(w.run()) for w in watchers]
        for watcher in watchers:
            await watcher.wait_for_sync()

    def distinct_shapes(self) -> list[Shape]:
        """One shape per membership object (status mode keeps every clique in one domain)."""
        return list({shape.name: shape for shape in self.shapes.values()}.values())

    def _watch(self, shape: Shape) -> Informer:
        informer = Informer(
            self.api,
            shape.resource,
            namespace=shape.namespace,
            field_selector=f"metadata.name={shape.name}",
        )

        def record(obj: dict[str, Any] | None) -> None:
            self.history.append((shape.name, obj))

        informer.add_handler(
            FuncHandler(
                add=record, update=lambda _, new: record(new), delete=lambda _: record(None)
            )
        )
        return informer

    def identity(self, node: Node) -> Identity:
        return Identity(
            node_name=node.name,
            pod_ip=node.ip,
            pod_uid=node.pod_uid,
            pod_name=node.pod,
            pod_namespace=self.namespace,
            clique_id=node.clique,
            cd_uid=self.cd_uid,
            cd_name=self.cd_name,
            cd_namespace=self.namespace,
        )

    # --- the kubelet's, the controller's and the user's actions ---------------------------

    async def start_daemon(self, node: Node, rng: random.Random) -> None:
        node.generation += 1
        directory = self.tmp / self.namespace / f"{node.name}-{node.generation}"
        started: list[HollowDaemon] = []

        async def spawn(on_line: Callable[[str], None]) -> ImexProcess:
            daemon = started[0]
            own_index = daemon.wanted[-1].identity
            assert isinstance(own_index, int)
            hosts = daemon.paths.hosts_file.read_text()
            own_line = f"{node.ip}\t{self.dns.dns_name(own_index)}\n"
            node.starts_with_own_mapping.append(own_line in hosts)  # F7
            return await ImexProcess.spawn(CHILD, on_line=on_line)

        daemon = await HollowDaemon.connect(
            self.server.url,
            self.server.token,
            self.identity(node),
            directory,
            mode=self.mode,
            limit=LIMIT,
            index_policy=self.policy,
            dns_policy=self.dns,
            spawn=spawn,
            timing=TIMING,
            rng=random.Random(rng.random()),
        )
        started.append(daemon)
        node.daemon = daemon
        await daemon.start()

    async def new_pod(self, node: Node) -> None:
        number = next(_numbers)
        node.pod = f"daemon-{node.name}-{number}"
        node.ip = f"10.{number // 62500 % 250}.{number // 250 % 250}.{number % 250 + 1}"
        node.ready = False
        node.pod_uid = await self.cluster.create_pod(node.pod, node.name, node.ip, self.cd_uid)

    async def act(self, kind: str, node: Node, rng: random.Random) -> None:
        if kind == "join" and not node.pod:
            await self.new_pod(node)
            await self.start_daemon(node, rng)
        elif kind == "leave" and node.daemon is not None:
            self.allowed_removals.add((node.name, node.pod_uid))
            await node.daemon.leave()
            await self._delete_pod(node)
        elif kind == "kill" and node.daemon is not None:
            await node.daemon.crash()
            await self._delete_pod(node)
        elif kind == "replace" and node.daemon is not None:
            await node.daemon.crash()
            await self._delete_pod(node)
            await self.new_pod(node)
            await self.start_daemon(node, rng)
        elif kind == "restart" and node.daemon is not None:
            await node.daemon.crash()
            await self.start_daemon(node, rng)
        elif kind in ("ready", "unready") and node.pod:
            node.ready = kind == "ready"
            await self.cluster.set_status(node.pod, ready=node.ready)
        elif kind == "cleanup":
            await self.cleanup()

    async def _delete_pod(self, node: Node) -> None:
        await self.cluster.delete_pod(node.pod)
        node.daemon, node.pod, node.pod_uid, node.ip = None, "", "", ""

    async def cleanup(self) -> None:
        live = {n.name for n in self.nodes if n.pod}
        self.allowed_removals |= {(n.name, "*") for n in self.nodes if n.name not in live}
        for shape in self.distinct_shapes():
            await self.cluster.cleanup(shape.resource, shape.name, self.cd_uid)

    async def stop(self) -> None:
        for node in self.nodes:
            if node.daemon is not None:
                await node.daemon.crash()
        for task in self.watch_tasks:
            task.cancel()
        await asyncio.gather(*self.watch_tasks, return_exceptions=True)

    # --- what must hold ---------------------------------------------------------------------

    def latest(self, shape: Shape) -> tuple[DaemonInfo, ...]:
        versions = [obj for name, obj in self.history if name == shape.name]
        return shape.entries(versions[-1]) if versions and versions[-1] is not None else ()

    def clique_entries(self, node: Node) -> dict[str, DaemonInfo]:
        entries = self.latest(self.shapes[node.clique])
        return {e.node_name: e for e in entries if e.clique_id == node.clique}

    def unsettled(self) -> str | None:
        """What still differs from the settled state (None when settled)."""
        for node in self.nodes:
            mine = self.clique_entries(node)
            if node.daemon is None:
                if node.name in mine:
                    return f"{node.name} has no daemon but an entry {mine[node.name]}"
                continue
            entry = mine.get(node.name)
            expected = (node.ip, node.pod_uid, Status.READY if node.ready else Status.NOT_READY)
            if entry is None or (entry.ip_address, entry.pod_uid, entry.status) != expected:
                return f"{node.name}: entry {entry}, expected (ip, pod, status) {expected}"  # S3 S9
            mapping = {self.dns.dns_name(e.index): e.ip_address for e in mine.values()}
            keeper = node.daemon.keeper
            assert keeper is not None
            if keeper.pid is None or dict(keeper.loaded.names) != mapping:  # P1, F9
                return (
                    f"{node.name}: keeper pid {keeper.pid} loaded {keeper.loaded}, want {mapping}"
                )
            hosts = node.daemon.paths.hosts_file
            text = hosts.read_text() if hosts.exists() else ""
            if _mapping(text) != mapping:  # F2
                return f"{node.name}: hosts file {text!r}, want {mapping}"
        return None

    def check(self, *, dense: bool) -> None:
        """The invariants; ``dense``: S4 applies (lowest-free policy and no removals)."""
        for shape in self.distinct_shapes():
            entries = self.latest(shape)
            for clique in {e.clique_id for e in entries}:
                indices = [e.index for e in entries if e.clique_id == clique]
                assert len(set(indices)) == len(indices), f"S1: duplicate index in {entries}"
                assert all(0 <= i < LIMIT for i in indices), f"S2: {indices}"
                if dense:
                    assert sorted(indices) == list(range(len(indices))), f"S4: {indices}"
            node_names = [e.node_name for e in entries]
            assert len(set(node_names)) == len(node_names), f"S1: duplicate node in {entries}"
            self._check_history(shape)
        for node in self.nodes:
            assert all(node.starts_with_own_mapping), f"F7: {node.name}"
            if node.daemon is not None and node.daemon.keeper is not None:
                stats = node.daemon.keeper.stats
                assert stats.identity_restarts == 0, f"P1: {node.name} restarted: {stats}"
                assert stats.unexpected_exits == 0, f"P3: {node.name}: {stats}"

    def _check_history(self, shape: Shape) -> None:
        versions = [obj for name, obj in self.history if name == shape.name]
        for before, after in itertools.pairwise(versions):
            if before is None or after is None:
                # Deleted by the garbage collector once every pod that wrote it is gone (its
                # owner references), and created afresh by the next daemon: not a lost update.
                continue
            old = {e.node_name: e for e in shape.entries(before)}
            new = {e.node_name: e for e in shape.entries(after)}
            for node, entry in old.items():
                if node in new:
                    if new[node].clique_id == entry.clique_id:
                        assert new[node].index == entry.index, f"S5: {entry} -> {new[node]}"
                    continue
                allowed = {(node, entry.pod_uid or ""), (node, "*")} & self.allowed_removals
                assert allowed, f"S6: {entry} vanished"


def _mapping(hosts: str) -> dict[str, str]:
    """Name -> IP of the live daemon lines of a hosts file (the sentinel's left out)."""
    return hostsfile.live_mapping(hosts)


@st.composite
def programs(draw: st.DrawFn) -> Program:
    cliques = draw(st.sampled_from([[1, 1, 1], [1, 1, 1, 1], [1, 1, 2, 2], [1, 2, 2]]))
    joins = [("join", i) for i in range(len(cliques))]
    steps = draw(
        st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, len(cliques) - 1)), max_size=8)
    )
    program = draw(st.permutations(joins + steps))
    return cliques, program, draw(st.integers(0, 2**32))


async def run_program(
    server: testing.RunningServer,
    tmp: Path,
    case: Case,
    drawn: Program,
    *,
    policy: IndexPolicy | None = None,
    within: float = 40.0,
) -> None:
    """Execute ``drawn``, wait until settled, check every invariant. Raises AssertionError."""
    cliques, program, seed = drawn
    rng = random.Random(seed)
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    scenario = Scenario(server, tmp, case, policy or POLICIES.index.get(case.index))
    try:
        await scenario.setup(api, cliques)
        for kind, index in program:
            await scenario.act(kind, scenario.nodes[index], rng)
        try:
            async with asyncio.timeout(within):
                # The controller prunes after every change, not once: a crashed daemon's last
                # request can still land after a pass (the server had it before the crash).
                await scenario.cleanup()
                while scenario.unsettled() is not None:
                    await asyncio.sleep(0.05)
                    await scenario.cleanup()
        except TimeoutError:
            raise AssertionError(f"not settled: {scenario.unsettled()}") from None
        removals = any(kind in ("leave", "kill", "replace") for kind, _ in program)
        # S4 (density) is the lowest-free rule's promise, not every policy's.
        scenario.check(dense=case.index == LOWEST_FREE and policy is None and not removals)
        for node in scenario.nodes:  # S7: a pass with nothing to do writes nothing
            if node.daemon is not None:
                writes = node.daemon.parts.registrar.stats.writes
                assert await node.daemon.parts.loop.step() is None
                assert node.daemon.parts.registrar.stats.writes == writes
    finally:
        await scenario.stop()
        await api.close()


# Every index policy in both membership shapes; every other DNS-name policy once.
CASES = [
    Case(mode, index=index)
    for index in POLICIES.index.names()
    for mode in (modes.CLIQUES, modes.STATUS_DNS)
] + [Case(modes.CLIQUES, dns=dns) for dns in POLICIES.dns_names.names() if dns != "upstream"]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_membership_invariants_hold_under_random_interleavings(
    server: testing.RunningServer, tmp_path: Path, case: Case
) -> None:
    @SETTINGS
    @given(programs())
    def check(drawn: Program) -> None:
        asyncio.run(run_program(server, tmp_path, case, drawn))

    check()


def test_more_daemons_than_indices_leave_the_surplus_unregistered(
    server: testing.RunningServer, tmp_path: Path
) -> None:
    """S3's second half: with more daemons than ``max``, exactly ``max`` are registered."""

    async def scenario() -> None:
        api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
        s = Scenario(server, tmp_path, Case(modes.CLIQUES), POLICIES.index.get("lowest-free"))
        try:
            await s.setup(api, [1] * (LIMIT + 2))
            rng = random.Random(7)
            await asyncio.gather(*(s.act("join", n, rng) for n in s.nodes))
            shape = s.shapes[s.nodes[0].clique]
            await eventually(lambda: len(s.latest(shape)) == LIMIT)
            registered = [
                n for n in s.nodes if n.daemon and n.daemon.parts.loop.registered.is_set()
            ]
            assert len(registered) == LIMIT
            s.check(dense=True)
        finally:
            await s.stop()
            await api.close()

    asyncio.run(scenario())


@attrs.frozen
class AlwaysZero:
    """A deliberately broken policy: every daemon asks for index 0."""

    name: str = "always-zero"

    def allocate(self, request: IndexRequest) -> int | None:
        return 0


class BrokenPlugin:
    @hookimpl
    def computedomain_index_policies(self) -> Sequence[IndexPolicy]:
        return (AlwaysZero(),)


def test_a_broken_policy_fails_the_suite(server: testing.RunningServer, tmp_path: Path) -> None:
    broken = registry.load(extra=[BrokenPlugin()]).index.get("always-zero")
    drawn: Program = ([1, 1, 1], [("join", 0), ("join", 1), ("join", 2)], 1)
    with pytest.raises(AssertionError, match="not settled"):  # only one can register (S3)
        asyncio.run(
            run_program(server, tmp_path, Case(modes.CLIQUES), drawn, policy=broken, within=3.0)
        )


def test_hosts_files_agree_across_daemons(server: testing.RunningServer, tmp_path: Path) -> None:
    """F5 through the API: the daemons of a clique end with the same mapping lines."""

    async def scenario() -> None:
        api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
        s = Scenario(server, tmp_path, Case(modes.CLIQUES), POLICIES.index.get("lowest-free"))
        try:
            await s.setup(api, [1, 1, 1, 2])
            rng = random.Random(3)
            await asyncio.gather(*(s.act("join", n, rng) for n in s.nodes))
            await eventually(lambda: s.unsettled() is None)
            sections: dict[str, set[frozenset[tuple[str, str]]]] = {}
            for n in s.nodes:
                assert n.daemon is not None
                text = n.daemon.paths.hosts_file.read_text()
                sections.setdefault(n.clique, set()).add(frozenset(_mapping(text).items()))
            assert [len(found) for found in sections.values()] == [1, 1]
        finally:
            await s.stop()
            await api.close()

    asyncio.run(scenario())
