"""The Ready condition: reason and message say what is missing."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain.api import convert, names
from computedomain.api.models import ComputeDomainNode, ConditionStatus
from computedomain.controller import readiness
from computedomain.controller.readiness import Problem
from tests.unit.controller import builders as b


def _nodes(*entries: dict[str, Any]) -> list[ComputeDomainNode]:
    return [convert.from_wire(ComputeDomainNode, e) for e in entries]


@pytest.mark.parametrize(
    ("nodes", "num", "status", "reason", "message"),
    [
        ([], 0, "True", "NodesReady", "0/0 nodes ready"),
        ([b.node_entry("a"), b.node_entry("b")], 2, "True", "NodesReady", "2/2 nodes ready"),
        ([b.node_entry("a", status=None)], 1, "True", "NodesReady", "1/1 nodes ready"),
        (
            [b.node_entry("a")],
            3,
            "False",
            "WaitingForNodes",
            "1/3 nodes ready (numNodes 3, 2 not joined)",
        ),
        (
            [b.node_entry("a"), b.node_entry("b", status="NotReady")],
            0,
            "False",
            "NodesNotReady",
            "1/2 nodes ready; b: NotReady, no daemon pod",
        ),
    ],
    ids=["none-needed", "all-ready", "no-status-is-ready", "waiting", "not-ready-without-pod"],
)
def test_summary(nodes: list[Any], num: int, status: str, reason: str, message: str) -> None:
    got = readiness.readiness(nodes=_nodes(*nodes), num_nodes=num, pods=[])
    assert (got.status, got.reason, got.message) == (ConditionStatus(status), reason, message)


@pytest.mark.parametrize(
    ("pod", "text"),
    [
        (b.pod("n", phase="Running"), "daemon pod Running"),
        (
            b.pod(
                "n",
                phase="Pending",
                conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            ),
            "daemon pod Pending: Unschedulable",
        ),
        (
            b.pod(
                "n",
                phase="Running",
                ready=False,
                container_statuses=[
                    {
                        "name": "d",
                        "state": {
                            "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}
                        },
                    }
                ],
            ),
            "daemon pod Running: back-off 5m0s",
        ),
        (
            b.pod(
                "n",
                conditions=[
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "ContainersNotReady",
                        "message": "containers with unready status: [d]",
                    }
                ],
            ),
            "daemon pod Running: containers with unready status: [d]",
        ),
        (b.pod("n", deleting=True), "daemon pod Running (terminating)"),
        (
            b.pod("n", conditions=[{"type": "Ready", "status": "False", "message": "x" * 500}]),
            "daemon pod Running: " + "x" * 197 + "...",
        ),
    ],
    ids=["running", "unschedulable", "crash-loop", "not-ready", "terminating", "clipped"],
)
def test_describe_pod(pod: dict[str, Any], text: str) -> None:
    assert readiness.describe_pod(pod) == text


def test_problems_come_first_and_make_it_false() -> None:
    got = readiness.readiness(
        nodes=_nodes(b.node_entry("a")),
        num_nodes=0,
        pods=[],
        problems=[Problem("WorkloadTemplateConflict", "template taken")],
    )
    assert got.status is ConditionStatus.FALSE
    assert got.reason == "WorkloadTemplateConflict"
    assert got.message == "template taken; 1/1 nodes ready"


def test_details_are_capped() -> None:
    nodes = _nodes(*(b.node_entry(f"n{i}", status="NotReady") for i in range(8)))
    got = readiness.readiness(nodes=nodes, num_nodes=0, pods=[])
    assert got.message.endswith("; and 3 more")
    assert got.message.count("NotReady, no daemon pod") == readiness.MAX_DETAILS


def _with_problem(pod: dict[str, Any], text: str) -> dict[str, Any]:
    pod["metadata"].setdefault("annotations", {})[names.DAEMON_PROBLEM_ANNOTATION] = text
    return pod


HELD = (
    "IMEXSessionHeldByHost: nvidia-imex cannot start: the IMEX session is held by a host "
    "nvidia-imex.service (NV_ERR_IN_USE)"
)


def test_a_host_problem_a_daemon_published_is_the_reason_and_quoted() -> None:
    pods = [
        b.pod("a", name="da"),
        _with_problem(b.pod("b", name="db", ready=False), HELD),
    ]
    nodes = _nodes(b.node_entry("a"), b.node_entry("b", status="NotReady"))
    got = readiness.readiness(nodes=nodes, num_nodes=2, pods=pods)
    assert got.status is ConditionStatus.FALSE
    assert got.reason == "IMEXSessionHeldByHost"
    assert got.message == (
        "1/2 nodes ready; b: daemon pod Running: nvidia-imex cannot start: the IMEX session is "
        "held by a host nvidia-imex.service (NV_ERR_IN_USE)"
    )


def test_a_published_problem_of_a_ready_node_is_ignored() -> None:
    pods = [_with_problem(b.pod("a", name="da"), HELD)]
    got = readiness.readiness(nodes=_nodes(b.node_entry("a")), num_nodes=1, pods=pods)
    assert (got.status, got.reason) == (ConditionStatus.TRUE, "NodesReady")


@pytest.mark.parametrize(
    ("text", "reason", "message"),
    [
        (HELD, "IMEXSessionHeldByHost", HELD.split(": ", 1)[1]),
        ("no reason here", "NodesNotReady", "no reason here"),
        ("Bad reason: words", "NodesNotReady", "Bad reason: words"),
    ],
)
def test_pod_problem_parses_reason_and_message(text: str, reason: str, message: str) -> None:
    assert readiness.pod_problem(_with_problem(b.pod("n"), text)) == Problem(reason, message)
    assert readiness.pod_problem(b.pod("n")) is None
