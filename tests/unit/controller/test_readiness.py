"""The Ready condition: reason and message say what is missing."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain.api import convert
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
