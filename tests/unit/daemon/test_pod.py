"""Readiness of the own pod, as the kubelet reports it."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain.api.models import Status
from computedomain.daemon import pod


def a_pod(phase: str, ready: str | None) -> dict[str, Any]:
    conditions = [{"type": "PodScheduled", "status": "True"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready})
    return {"status": {"phase": phase, "conditions": conditions}}


@pytest.mark.parametrize(
    ("phase", "ready", "expected"),
    [
        ("Running", "True", True),
        ("Running", "False", False),
        ("Running", None, False),
        ("Pending", "True", False),
        ("Succeeded", "True", False),
    ],
)
def test_ready_means_running_with_ready_true(phase: str, ready: str | None, expected: bool) -> None:
    assert pod.pod_ready(a_pod(phase, ready)) is expected


def test_desired_status() -> None:
    assert pod.desired_status(None, blocked=False) is None
    assert pod.desired_status(a_pod("Running", "True"), blocked=False) is Status.READY
    assert pod.desired_status(a_pod("Running", "True"), blocked=True) is Status.NOT_READY
    assert pod.desired_status({}, blocked=False) is Status.NOT_READY
