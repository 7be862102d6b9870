"""The controller against the embedded API server, driven by Hypothesis (clique mode).

One API server and one in-process controller run on a background event loop for the module;
each example is a fresh domain whose daemons Hypothesis plays through the API: joins,
readiness flips, graceful and crashed departures, IP changes. After every step the clique must
still hold the entry of every present daemon (the controller never prunes a live node); after
quiescence the domain's ``status.nodes`` must equal the model's set. The pure-level model test
(``test_controller_status``) covers the cache-lag cases; this one covers the real wiring: events,
coalescing, compare-and-swap writes, live reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, ClassVar, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import CLIQUE, Bench, bench, entry, next_ip
from tests.support.clusters import CRDS

T = TypeVar("T")
NODES = ("n0", "n1", "n2", "n3")
_examples = itertools.count()


class Runtime:
    """An event loop on a thread, holding a bench with a running controller."""

    def __init__(self, server: testing.RunningServer) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._bench_cm = bench(server)
        self.bench: Bench = self.call(self._bench_cm.__aenter__())
        self.call(self.bench.start(self.bench.config(status_coalesce_window=0.05)))

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call(self._bench_cm.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def runtime(apiserver: testing.RunningServer) -> Iterator[Runtime]:
    apiserver.install_crds([CRDS])
    rt = Runtime(apiserver)
    yield rt
    rt.close()


class ServerModel(RuleBasedStateMachine):
    runtime: ClassVar[Runtime]

    def __init__(self) -> None:
        super().__init__()
        self.b = self.runtime.bench
        self.name = f"p{next(_examples)}"
        created = self.runtime.call(self.b.create_domain(self.name))
        self.uid = created["metadata"]["uid"]
        self.pods: dict[str, dict[str, Any]] = {}
        self.entries: dict[str, dict[str, Any]] = {}

    def _pod_name(self, node: str) -> str:
        return f"{self.name}-{node}"

    def _write_clique(self) -> None:
        daemons = [self.entries[n] for n in sorted(self.entries)]
        self.runtime.call(self._sync_clique(daemons))

    async def _sync_clique(self, daemons: list[dict[str, Any]]) -> None:
        """As the daemons do: a read-modify-write that keeps our entries, whatever pruned."""
        await self.b.set_clique(self.uid, daemons)

    @rule(node=st.sampled_from(NODES))
    def join(self, node: str) -> None:
        if node in self.pods:
            return
        pod = self.runtime.call(
            self.b.daemon_pod(self.uid, node, ready=False, name=self._pod_name(node))
        )
        self.pods[node] = pod
        self.entries[node] = entry(
            node, pod["status"]["podIP"], index=NODES.index(node), status="NotReady"
        )
        self._write_clique()

    @rule(node=st.sampled_from(NODES), ready=st.booleans())
    def readiness(self, node: str, ready: bool) -> None:
        pod = self.pods.get(node)
        if pod is None:
            return
        ip = self.entries[node]["ipAddress"] if node in self.entries else pod["status"]["podIP"]
        self.pods[node] = self.runtime.call(self.b.set_pod_status(pod, ip=ip, ready=ready))
        if node in self.entries:
            self.entries[node]["status"] = "Ready" if ready else "NotReady"
            self._write_clique()

    @rule(node=st.sampled_from(NODES))
    def ip_change(self, node: str) -> None:
        pod = self.pods.get(node)
        if pod is None:
            return
        ip = next_ip()
        ready = pod["status"]["conditions"][0]["status"] == "True"
        self.pods[node] = self.runtime.call(self.b.set_pod_status(pod, ip=ip, ready=ready))
        if node in self.entries:
            self.entries[node]["ipAddress"] = ip
            self._write_clique()

    @rule(node=st.sampled_from(NODES), graceful=st.booleans())
    def leave(self, node: str, graceful: bool) -> None:
        if self.pods.pop(node, None) is None:
            return
        self.runtime.call(self._delete_pod(node))
        if graceful:
            self.entries.pop(node, None)
            self._write_clique()
        else:
            self.entries.pop(node, None)  # the crashed daemon's entry is for the controller

    async def _delete_pod(self, node: str) -> None:
        await self.b.delete_pod(self._pod_name(node))

    def check_present_entries(self) -> None:
        clique = self.runtime.call(self._clique())
        listed = {d["nodeName"] for d in (clique or {}).get("daemons") or []}
        missing = set(self.entries) & set(self.pods) - listed
        assert not missing, f"the controller pruned present daemons {missing}"

    async def _clique(self) -> dict[str, Any] | None:
        name = names.clique_object_name(self.uid, CLIQUE)
        with contextlib.suppress(errors.NotFound):
            return await self.b.api.get(resources.COMPUTE_DOMAIN_CLIQUES, name, self.b.driver)
        return None

    def _after_step(self) -> None:
        if self.entries:
            self.check_present_entries()

    def teardown(self) -> None:
        expected = {
            n: (self.entries[n]["ipAddress"], self.entries[n]["status"]) for n in self.entries
        }

        def matches(status: dict[str, Any]) -> bool:
            got = {n["name"]: (n["ipAddress"], n.get("status")) for n in status.get("nodes", [])}
            return got == expected

        try:
            self.runtime.call(self.b.wait_status(self.name, matches, "the model's nodes"), 60)
        finally:
            self.runtime.call(self._cleanup())

    async def _cleanup(self) -> None:
        for node in list(self.pods):
            await self._delete_pod(node)
        with contextlib.suppress(errors.NotFound):
            name = names.clique_object_name(self.uid, CLIQUE)
            await self.b.api.delete(resources.COMPUTE_DOMAIN_CLIQUES, name, self.b.driver)
        await self.b.delete_domain_and_wait(self.name)


def _checked(cls: type[ServerModel]) -> type[ServerModel]:
    """Run the present-entry check after every rule."""
    from hypothesis.stateful import invariant

    def present_entries_kept(self: ServerModel) -> None:
        self._after_step()

    cls.present_entries_kept = invariant()(present_entries_kept)  # type: ignore[attr-defined]
    return cls


_checked(ServerModel)


@pytest.mark.slow
def test_controller_against_the_server(runtime: Runtime) -> None:
    ServerModel.runtime = runtime
    run_state_machine_as_test(
        ServerModel,
        settings=settings(
            max_examples=10,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
        ),
    )
