"""Every status rule (docs/compatibility.md#status-aggregation), as a table, against the embedded
API server.

For each mode (clique mode: daemons write cliques; status mode: daemons write
``status.nodes``) one controller runs and every case is a domain of its own: the tester writes
the daemon pods, clique entries or daemon-written entries, and waits for the domain's
``status.nodes`` and ``status.status`` to be what the rules say.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import attrs
import pytest

from computedomain.api import featuregates, names
from computedomain.kube import errors, resources
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import CLIQUE, Bench, bench, entry, next_ip
from tests.support.polling import eventually

FABRIC, NON_FABRIC, UNLABELLED = CLIQUE, "", None


@attrs.frozen
class Case:
    id: str
    num_nodes: int | None
    pods: tuple[tuple[str, str | None, bool], ...]  # (node, clique label, ready)
    entries: tuple[tuple[str, str | None], ...]  # (node, status) written by daemons
    nodes: dict[str, tuple[int | None, str | None]]  # name -> (index or -1, status)
    status: str
    pruned: bool = False  # the daemons' entries must first be pruned from the clique


CASES = {
    "cliques": [
        Case("empty-numnodes-0", None, (), (), {}, "Ready"),
        Case(
            "one-of-two",
            2,
            (("n1", FABRIC, True),),
            (("n1", "Ready"),),
            {"n1": (0, "Ready")},
            "NotReady",
        ),
        Case(
            "two-of-two",
            2,
            (("n1", FABRIC, True), ("n2", FABRIC, True)),
            (("n1", "Ready"), ("n2", "Ready")),
            {"n1": (0, "Ready"), "n2": (1, "Ready")},
            "Ready",
        ),
        # Written without a status, entries get the CRD's default (NotReady) from the API
        # server, so through the API they count as NotReady; the rule that an entry without
        # status counts as ready is exercised on the planner's own tables.
        Case(
            "entries-without-status",
            2,
            (("n1", FABRIC, True), ("n2", FABRIC, True)),
            (("n1", None), ("n2", None)),
            {"n1": (0, "NotReady"), "n2": (1, "NotReady")},
            "NotReady",
        ),
        Case(
            "entry-not-ready",
            None,
            (("n1", FABRIC, False),),
            (("n1", "NotReady"),),
            {"n1": (0, "NotReady")},
            "NotReady",
        ),
        Case(
            "non-fabric-ready", 1, (("n1", NON_FABRIC, True),), (), {"n1": (-1, "Ready")}, "Ready"
        ),
        Case(
            "non-fabric-unready",
            None,
            (("n1", NON_FABRIC, False),),
            (),
            {"n1": (-1, "NotReady")},
            "NotReady",
        ),
        Case("joining-not-listed", 1, (("n1", UNLABELLED, False),), (), {}, "NotReady"),
        Case("crashed-daemon-pruned", None, (), (("n1", "Ready"),), {}, "Ready", pruned=True),
    ],
    "status": [
        Case("empty-numnodes-0", None, (), (), {}, "Ready"),
        Case(
            "entry-with-pod-kept",
            1,
            (("n1", FABRIC, True),),
            (("n1", "Ready"),),
            {"n1": (0, "Ready")},
            "Ready",
        ),
        Case("entry-without-pod-dropped", None, (), (("n1", "Ready"),), {}, "Ready"),
        Case(
            "entry-without-status",
            1,
            (("n1", FABRIC, True),),
            (("n1", None),),
            {"n1": (0, "NotReady")},
            "NotReady",
        ),
        Case(
            "entry-not-ready",
            1,
            (("n1", FABRIC, True),),
            (("n1", "NotReady"),),
            {"n1": (0, "NotReady")},
            "NotReady",
        ),
        Case(
            "non-fabric-pod", 2, (("n1", NON_FABRIC, True),), (), {"n1": (-1, "Ready")}, "NotReady"
        ),
        Case(
            "unlabelled-pod-keeps-entry",
            None,
            (("n1", UNLABELLED, True),),
            (("n1", "Ready"),),
            {"n1": (0, "Ready")},
            "Ready",
        ),
    ],
}


async def _write_status_nodes(b: Bench, name: str, nodes: list[dict[str, Any]]) -> None:
    """As status-mode daemons do: put entries into status.nodes (compare-and-swap)."""
    for _ in range(20):
        domain = await b.domain(name)
        body = copy.deepcopy(domain)
        status = body.setdefault("status", {"status": "NotReady"})
        status["nodes"] = nodes
        try:
            await b.api.update_status(resources.COMPUTE_DOMAINS, body)
        except errors.Conflict:
            continue
        return
    msg = "status kept conflicting"
    raise AssertionError(msg)


async def _run_case(b: Bench, mode: str, case: Case) -> str | None:
    name = case.id
    domain = await b.create_domain(name, num_nodes=case.num_nodes)
    uid = domain["metadata"]["uid"]
    await b.wait_status(name, lambda s: True, "a first status")
    ips = {}
    for node, clique, ready in case.pods:
        pod = await b.daemon_pod(uid, node, clique=clique, ready=ready, name=f"{name}-{node}")
        ips[node] = pod["status"]["podIP"]
    written = [
        entry(node, ips.get(node) or next_ip(), index=i, status=status)
        for i, (node, status) in enumerate(case.entries)
    ]
    if written and mode == "cliques":
        await b.set_clique(uid, written)
    elif written:
        nodes = []
        for e in written:
            node = {
                "name": e["nodeName"],
                "ipAddress": e["ipAddress"],
                "cliqueID": e["cliqueID"],
                "index": e["index"],
            }
            if "status" in e:
                node["status"] = e["status"]
            nodes.append(node)
        await _write_status_nodes(b, name, nodes)

    def matches(status: dict[str, Any]) -> bool:
        got = {n["name"]: (n["index"], n.get("status")) for n in status.get("nodes", [])}
        return (
            got == case.nodes
            and status["status"] == case.status
            and (bool(case.nodes) or "nodes" not in status)
        )

    try:
        if case.pruned:

            async def pruned() -> bool:
                clique = names.clique_object_name(uid, CLIQUE)
                obj = await b.api.get(resources.COMPUTE_DOMAIN_CLIQUES, clique, b.driver)
                return not obj.get("daemons")

            await eventually(pruned, what=f"case {case.id}: the clique entries to be pruned")
        await b.wait_status(name, matches, f"case {case.id}")
    except AssertionError as exc:
        return f"{case.id}: {exc}"
    return None


@pytest.mark.parametrize("mode", ["cliques", "status"])
async def test_status_rules(apiserver: testing.RunningServer, mode: str) -> None:
    async with bench(apiserver) as b:
        gates = "" if mode == "cliques" else f"{featuregates.COMPUTE_DOMAIN_CLIQUES}=false"
        await b.start(b.config(gates=gates))
        failures = await asyncio.gather(*(_run_case(b, mode, c) for c in CASES[mode]))
        assert [f for f in failures if f] == []


async def test_pod_missing_from_cache_is_confirmed_live(apiserver: testing.RunningServer) -> None:
    """Status mode: an entry whose pod the cache has not seen is kept after a live read."""
    async with bench(apiserver) as b:
        gates = f"{featuregates.COMPUTE_DOMAIN_CLIQUES}=false"
        controller = await b.start(b.config(gates=gates))
        domain = await b.create_domain("cd", num_nodes=1)
        uid = domain["metadata"]["uid"]
        await b.wait_status("cd", lambda s: True, "a first status")
        # Stop the pod informer of the driver namespace, so the cache misses the new pod.
        pods = controller.caches.pods[b.driver]
        stalled = [t for t in asyncio.all_tasks() if t.get_name() == f"informer:{pods.name}"]
        assert len(stalled) == 1
        stalled[0].cancel()
        pod = await b.daemon_pod(uid, "n1", clique=CLIQUE, ready=True, name="cd-n1")
        live_reads_before = b.api.stats.total(verb="list", resource="pods")
        await _write_status_nodes(
            b,
            "cd",
            [
                {
                    "name": "n1",
                    "ipAddress": pod["status"]["podIP"],
                    "cliqueID": CLIQUE,
                    "index": 0,
                    "status": "Ready",
                }
            ],
        )

        async def confirmed() -> bool:
            return b.api.stats.total(verb="list", resource="pods") > live_reads_before

        await eventually(confirmed, what="a live read of the daemon pods")
        domain = await b.wait_status("cd", lambda s: s["status"] == "Ready", "Ready")
        assert [n["name"] for n in domain["status"]["nodes"]] == ["n1"]
        assert pods.store.get(f"{b.driver}/cd-n1") is None  # the cache really missed it
