"""Status aggregation against a model, under random daemon pod and clique events.

A model cluster holds the truth (daemon pods in the API, what the pod cache shows, the clique
entries or daemon-written ``status.nodes``, the domain's status); the controller's real planner
runs against it, with a live read answered from the model's API pods, and its status writes and
clique prunes are applied to the model. Hypothesis drives joins, readiness flips, graceful and
crashed departures, IP changes and pods missing from the cache while present in the API, in both
modes. Invariants: a node whose daemon is present (pod in the API, entry registered) is never
dropped from ``status.nodes`` once listed, nor pruned from its clique; after quiescence (cache
caught up, controller idle) ``status.nodes`` is exactly the model's set.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from computedomain.api import names
from computedomain.controller import planning
from computedomain.controller.actions import PruneClique, ReadLivePods, WriteStatus
from computedomain.controller.snapshot import Mode
from tests.unit.controller import builders as b

NODES = [f"node-{i}" for i in range(6)]
node_names = st.sampled_from(NODES)


class StatusModel(RuleBasedStateMachine):
    """One domain; the controller's planner against a model of its daemons."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = Mode.CLIQUES
        self.num_nodes = 0
        self.pods: dict[str, dict[str, Any]] = {}  # in the API
        self.hidden: set[str] = set()  # in the API but not (yet) in the pod cache
        self.entries: dict[str, dict[str, Any]] = {}  # daemon-written (clique or status.nodes)
        self.status: dict[str, Any] | None = None
        self.ips = 0
        self.listed: set[str] = set()
        self.started = False

    # -- setup -------------------------------------------------------------------------------

    @rule(mode=st.sampled_from(list(Mode)), num_nodes=st.integers(0, 4))
    @precondition(lambda self: not self.started)
    def configure(self, mode: Mode, num_nodes: int) -> None:
        self.mode = mode
        self.num_nodes = num_nodes

    # -- daemons and kubelets ----------------------------------------------------------------

    def _ip(self) -> str:
        self.ips += 1
        return f"10.1.{self.ips // 250}.{self.ips % 250 + 1}"

    def _free_index(self) -> int:
        used = {e["index"] for e in self.entries.values()}
        return next(i for i in range(len(NODES) + 1) if i not in used)

    @rule(node=node_names, fabric=st.booleans(), cached=st.booleans())
    def join(self, node: str, fabric: bool, cached: bool) -> None:
        self.started = True
        if node in self.pods:
            return
        ip = self._ip()
        clique = b.CLIQUE_ID if fabric else ""
        self.pods[node] = b.pod(node, clique=clique, ip=ip, ready=False)
        if not cached:
            self.hidden.add(node)
        if fabric:
            self.entries[node] = {
                "cliqueID": b.CLIQUE_ID,
                "ipAddress": ip,
                "index": self._free_index(),
                "status": "NotReady",
            }
            if self.mode is Mode.STATUS:
                self._daemon_writes_status(node)

    @rule(node=node_names, ready=st.booleans())
    def readiness(self, node: str, ready: bool) -> None:
        pod = self.pods.get(node)
        if pod is None:
            return
        clique = pod["metadata"]["labels"][names.CLIQUE_LABEL]
        self.pods[node] = b.pod(node, clique=clique, ip=pod["status"]["podIP"], ready=ready)
        if node in self.entries:
            self.entries[node]["status"] = "Ready" if ready else "NotReady"
            if self.mode is Mode.STATUS:
                self._daemon_writes_status(node)

    @rule(node=node_names)
    def ip_change(self, node: str) -> None:
        pod = self.pods.get(node)
        if pod is None:
            return
        ip = self._ip()
        labels = pod["metadata"]["labels"]
        ready = pod["status"]["conditions"][0]["status"] == "True"
        self.pods[node] = b.pod(node, clique=labels[names.CLIQUE_LABEL], ip=ip, ready=ready)
        if node in self.entries:
            self.entries[node]["ipAddress"] = ip
            if self.mode is Mode.STATUS:
                self._daemon_writes_status(node)

    @rule(node=node_names, graceful=st.booleans())
    def leave(self, node: str, graceful: bool) -> None:
        if self.pods.pop(node, None) is None:
            return
        self.hidden.discard(node)
        if graceful or self.mode is Mode.STATUS:
            # A graceful daemon removes its entry; in status mode a crashed one leaves it in
            # status.nodes (its own memory of it is gone), in clique mode in the clique.
            known = self.entries.pop(node, None) is not None
            if graceful and known and self.mode is Mode.STATUS:
                self._daemon_writes_status(node)

    @rule(node=node_names)
    def hide(self, node: str) -> None:
        if node in self.pods:
            self.hidden.add(node)

    @rule()
    def cache_catches_up(self) -> None:
        self.hidden.clear()

    def _daemon_writes_status(self, node: str) -> None:
        """Status mode: a daemon writes (or removes) its own entry in status.nodes."""
        status = dict(self.status or {"status": "NotReady"})
        by_name = {n["name"]: n for n in status.get("nodes") or []}
        if node in self.entries:
            by_name[node] = {"name": node, **self.entries[node]}
        else:
            by_name.pop(node, None)
        if by_name:
            status["nodes"] = list(by_name.values())
        else:
            status.pop("nodes", None)
        self.status = status

    # -- the controller ----------------------------------------------------------------------

    def _snapshot(self) -> Any:
        cd = b.domain(num_nodes=self.num_nodes or None, finalizers=(names.FINALIZER,))
        if self.status is not None:
            cd["status"] = self.status
        cliques = ()
        if self.mode is Mode.CLIQUES and self.entries:
            daemons = [{"nodeName": n, **e} for n, e in sorted(self.entries.items())]
            cliques = (b.clique(daemons=daemons),)
        pods = tuple(p for n, p in self.pods.items() if n not in self.hidden)
        return b.full_snapshot(cd, mode=self.mode, pods=pods, cliques=cliques)

    def _present(self) -> set[str]:
        return {n for n in self.pods if n in self.entries}

    @rule()
    def reconcile(self) -> None:
        snapshot = self._snapshot()
        actions = planning.plan(snapshot)
        if actions == (ReadLivePods("uid-1"),):
            snapshot = attrs.evolve(snapshot, live_pods=tuple(self.pods.values()))
            actions = planning.plan(snapshot)
            assert not any(isinstance(a, ReadLivePods) for a in actions)
        present_before = self._present()
        for action in actions:
            if isinstance(action, WriteStatus):
                assert action.based_on == self.status
                self.status = dict(action.status)
            elif isinstance(action, PruneClique):
                assert not (action.nodes & present_before), "pruned a present daemon"
                for node in action.nodes:
                    self.entries.pop(node, None)
        listed_now = {n["name"] for n in (self.status or {}).get("nodes") or []}
        dropped = (self.listed & present_before) - listed_now
        assert not dropped, f"dropped present nodes {dropped}"
        self.listed = listed_now

    # -- checks ------------------------------------------------------------------------------

    @invariant()
    def nodes_are_unique(self) -> None:
        names_ = [n["name"] for n in (self.status or {}).get("nodes") or []]
        assert len(names_) == len(set(names_))

    def teardown(self) -> None:
        """Quiescence: the cache catches up and the controller runs until it has nothing to do."""
        self.hidden.clear()
        for _ in range(5):
            before = (self.status, dict(self.entries))
            self.reconcile()
            if (self.status, dict(self.entries)) == before:
                break
        expected = {}
        for node, pod in self.pods.items():
            if node in self.entries:
                entry = self.entries[node]
                expected[node] = (entry["ipAddress"], entry["status"], entry["index"])
            elif pod["metadata"]["labels"][names.CLIQUE_LABEL] == "":
                ready = pod["status"]["conditions"][0]["status"] == "True"
                expected[node] = (pod["status"]["podIP"], "Ready" if ready else "NotReady", -1)
        status = self.status or {}
        got = {
            n["name"]: (n["ipAddress"], n.get("status"), n["index"])
            for n in status.get("nodes") or []
        }
        assert got == expected
        assert set(self.entries) <= set(self.pods), "a departed daemon's entry was not pruned"
        listed = len(got)
        ready = all(v[1] != "NotReady" for v in got.values())
        want = "Ready" if listed >= self.num_nodes and ready else "NotReady"
        assert status.get("status") == want


StatusModel.TestCase.settings = settings(max_examples=80, stateful_step_count=25, deadline=None)
TestStatusModel = StatusModel.TestCase
