"""Status aggregation rules (docs/compatibility.md#status-aggregation), as tables (clique mode and
status mode)."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain.api import convert
from computedomain.api.models import ComputeDomainNode, Status
from computedomain.controller import aggregation
from computedomain.controller.snapshot import Mode
from tests.unit.controller import builders as b

C = b.CLIQUE_ID


def _nodes(entries: list[dict[str, Any]]) -> list[ComputeDomainNode]:
    return [convert.from_wire(ComputeDomainNode, e) for e in entries]


def _cliques(*daemon_lists: list[dict[str, Any]]) -> list[Any]:
    ids = [f"{C[:-1]}{i}" for i in range(len(daemon_lists))]
    return [
        convert.clique(b.clique(clique_id=i, daemons=d))
        for i, d in zip(ids, daemon_lists, strict=False)
    ]


CLIQUE_CASES: list[tuple[str, int, list[Any], list[Any], list[dict[str, Any]], str]] = [
    # (id, numNodes, cliques' daemons, pods, expected nodes, expected global status)
    ("no-nodes-numnodes-0-is-ready", 0, [], [], [], "Ready"),
    ("no-nodes-numnodes-2-not-ready", 2, [], [], [], "NotReady"),
    (
        "all-ready",
        2,
        [[b.daemon("n1", "10.0.0.1", index=0), b.daemon("n2", "10.0.0.2", index=1)]],
        [],
        [b.node_entry("n1", "10.0.0.1", index=0), b.node_entry("n2", "10.0.0.2", index=1)],
        "Ready",
    ),
    (
        "one-not-ready",
        2,
        [[b.daemon("n1"), b.daemon("n2", "10.0.0.2", index=1, status="NotReady")]],
        [],
        [b.node_entry("n1"), b.node_entry("n2", "10.0.0.2", index=1, status="NotReady")],
        "NotReady",
    ),
    (
        "fewer-than-numnodes",
        3,
        [[b.daemon("n1"), b.daemon("n2", index=1)]],
        [],
        [b.node_entry("n1"), b.node_entry("n2", index=1)],
        "NotReady",
    ),
    (
        "more-than-numnodes-is-fine",
        1,
        [[b.daemon("n1"), b.daemon("n2", index=1)]],
        [],
        [b.node_entry("n1"), b.node_entry("n2", index=1)],
        "Ready",
    ),
    (
        "entries-without-status-count-as-ready",
        2,
        [[b.daemon("n1", status=None), b.daemon("n2", index=1, status=None)]],
        [],
        [b.node_entry("n1", status=None), b.node_entry("n2", index=1, status=None)],
        "Ready",
    ),
    (
        "numnodes-0-with-not-ready-entry",
        0,
        [[b.daemon("n1", status="NotReady")]],
        [],
        [b.node_entry("n1", status="NotReady")],
        "NotReady",
    ),
    (
        "non-fabric-ready-pod",
        1,
        [],
        [b.pod("n9", clique="", ip="10.0.0.9")],
        [b.node_entry("n9", "10.0.0.9", clique="", index=-1, pod_uid="pod-uid-1-n9")],
        "Ready",
    ),
    (
        "non-fabric-unready-pod",
        0,
        [],
        [b.pod("n9", clique="", ip="10.0.0.9", ready=False)],
        [
            b.node_entry(
                "n9", "10.0.0.9", clique="", index=-1, status="NotReady", pod_uid="pod-uid-1-n9"
            )
        ],
        "NotReady",
    ),
    (
        "non-fabric-pod-without-ip-or-node-skipped",
        0,
        [],
        [b.pod("n9", clique="", ip=""), b.pod("n8", clique="", bound=False)],
        [],
        "Ready",
    ),
    (
        "unlabelled-pod-is-fabric-not-listed",
        0,
        [],
        [b.pod("n7", clique=None)],
        [],
        "Ready",
    ),
    (
        "fabric-pod-without-clique-entry-not-listed",
        1,
        [],
        [b.pod("n1")],
        [],
        "NotReady",
    ),
    (
        "cliques-by-name-then-non-fabric",
        0,
        [[b.daemon("n2", "10.0.0.2")], [b.daemon("n1", "10.0.0.1")]],
        [b.pod("n0", clique="", ip="10.0.0.5")],
        [
            b.node_entry("n2", "10.0.0.2"),
            b.node_entry("n1", "10.0.0.1"),
            b.node_entry("n0", "10.0.0.5", clique="", index=-1, pod_uid="pod-uid-1-n0"),
        ],
        "Ready",
    ),
    (
        "duplicate-names-first-wins",
        0,
        [[b.daemon("n1", "10.0.0.1")]],
        [b.pod("n1", clique="", ip="10.0.0.7")],
        [b.node_entry("n1", "10.0.0.1")],
        "Ready",
    ),
]


@pytest.mark.parametrize(
    ("num_nodes", "daemons", "pods", "expected", "status"),
    [case[1:] for case in CLIQUE_CASES],
    ids=[case[0] for case in CLIQUE_CASES],
)
def test_clique_mode(
    num_nodes: int,
    daemons: list[Any],
    pods: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    status: str,
) -> None:
    agg = aggregation.aggregate(Mode.CLIQUES, (), _cliques(*daemons), pods)
    assert list(agg.nodes) == _nodes(expected)
    assert agg.doubtful == frozenset()
    assert aggregation.global_status(agg.nodes, num_nodes) == Status(status)


STATUS_CASES: list[tuple[str, int, list[dict[str, Any]], list[Any], list[str], set[str], str]] = [
    # (id, numNodes, current status.nodes, pods, kept names, doubtful, global status)
    ("empty", 0, [], [], [], set(), "Ready"),
    ("empty-numnodes-1", 1, [], [], [], set(), "NotReady"),
    (
        "entries-with-pods-kept",
        2,
        [b.node_entry("n1"), b.node_entry("n2", index=1)],
        [b.pod("n1"), b.pod("n2")],
        ["n1", "n2"],
        set(),
        "Ready",
    ),
    (
        "entry-without-pod-dropped-and-doubtful",
        1,
        [b.node_entry("n1"), b.node_entry("n2", index=1)],
        [b.pod("n1")],
        ["n1"],
        {"n2"},
        "Ready",
    ),
    (
        "empty-clique-entry-rebuilt-from-pods",
        0,
        [b.node_entry("n3", clique="", index=-1)],
        [b.pod("n3", clique="", ip="10.0.0.3", ready=False)],
        ["n3"],
        set(),
        "NotReady",
    ),
    (
        "stale-empty-clique-entry-dropped-not-doubtful",
        0,
        [b.node_entry("n3", clique="", index=-1)],
        [],
        [],
        set(),
        "Ready",
    ),
    (
        "pod-ip-changed-entry-kept-by-node",
        0,
        [b.node_entry("n1", "10.0.0.1")],
        [b.pod("n1", ip="10.0.0.99")],
        ["n1"],
        set(),
        "Ready",
    ),
    (
        "failed-pod-does-not-keep-entry",
        0,
        [b.node_entry("n1")],
        [b.pod("n1", phase="Failed")],
        [],
        {"n1"},
        "Ready",
    ),
    (
        "unlabelled-pod-keeps-entry",
        0,
        [b.node_entry("n1")],
        [b.pod("n1", clique=None)],
        ["n1"],
        set(),
        "Ready",
    ),
    (
        "non-fabric-pod-does-not-keep-fabric-entry",
        0,
        [b.node_entry("n1")],
        [b.pod("n1", clique="", ip="10.0.0.1")],
        ["n1"],
        {"n1"},
        "Ready",
    ),
    (
        "not-ready-entry-kept",
        1,
        [b.node_entry("n1", status="NotReady")],
        [b.pod("n1")],
        ["n1"],
        set(),
        "NotReady",
    ),
    (
        "entry-without-status-counts-ready",
        1,
        [b.node_entry("n1", status=None)],
        [b.pod("n1")],
        ["n1"],
        set(),
        "Ready",
    ),
]


@pytest.mark.parametrize("case", STATUS_CASES, ids=[case[0] for case in STATUS_CASES])
def test_status_mode(case: tuple[Any, ...]) -> None:
    _, num_nodes, current, pods, kept, doubtful, status = case
    agg = aggregation.aggregate(Mode.STATUS, _nodes(current), [], pods)
    assert [n.name for n in agg.nodes] == kept
    assert agg.doubtful == frozenset(doubtful)
    assert aggregation.global_status(agg.nodes, num_nodes) == Status(status)


def test_non_fabric_entry_shape() -> None:
    (entry,) = aggregation.non_fabric_nodes([b.pod("n4", clique="", ip="10.1.1.1")])
    assert convert.to_wire(entry) == {
        "name": "n4",
        "ipAddress": "10.1.1.1",
        "cliqueID": "",
        "index": -1,
        "status": "Ready",
        "podUID": "pod-uid-1-n4",
    }


@pytest.mark.parametrize(
    ("a", "b_", "equal"),
    [
        ([b.node_entry("n1"), b.node_entry("n2")], [b.node_entry("n2"), b.node_entry("n1")], True),
        ([b.node_entry("n1")], [b.node_entry("n1", status="NotReady")], False),
        ([b.node_entry("n1")], [b.node_entry("n1", "10.9.9.9")], False),
        ([b.node_entry("n1")], [b.node_entry("n1", index=3)], False),
        ([], [], True),
        ([b.node_entry("n1")], [], False),
    ],
    ids=["order-ignored", "status", "ip", "index", "both-empty", "one-empty"],
)
def test_nodes_equal_is_a_map_comparison(
    a: list[dict[str, Any]], b_: list[dict[str, Any]], equal: bool
) -> None:
    assert aggregation.nodes_equal(_nodes(a), _nodes(b_)) is equal


def test_daemon_nodes_counts_terminating_but_not_finished_pods() -> None:
    pods = [
        b.pod("n1", deleting=True),
        b.pod("n2", phase="Succeeded"),
        b.pod("n3", bound=False),
        b.pod("n4", clique=""),
    ]
    assert aggregation.daemon_nodes(pods) == {"n1", "n3", "n4"}
    assert aggregation.daemon_nodes(pods, fabric_only=True) == {"n1", "n3"}
