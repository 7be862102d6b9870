"""Pod phase, conditions and container statuses from the kubelet's records."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.kubelet.status import ContainerRecord, State, pod_status

SCHEDULED = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "t0"}


def pod(conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "status": {
            "conditions": conditions if conditions is not None else [SCHEDULED],
            "resourceClaimStatuses": [{"name": "c", "resourceClaimName": "p-c-x"}],
        },
    }


def running(name: str = "c", *, ready: bool = True) -> ContainerRecord:
    return ContainerRecord(
        name, "img", State.RUNNING, "", pid=42, started_at="t1", started=True, ready=ready
    )


def status(
    records: list[ContainerRecord],
    init: list[ContainerRecord] | None = None,
    old: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return pod_status(
        old or pod(),
        init or [],
        records,
        pod_ip="127.9.1.5",
        host_ip="127.9.0.1",
        start_time="t0",
        now="t2",
    )


def conditions(out: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in out["conditions"]}


def test_running_and_ready() -> None:
    out = status([running()])
    assert out["phase"] == "Running"
    assert conditions(out) == {
        "PodScheduled": "True",
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    assert out["podIP"] == "127.9.1.5"
    assert out["podIPs"] == [{"ip": "127.9.1.5"}]
    assert out["resourceClaimStatuses"] == [{"name": "c", "resourceClaimName": "p-c-x"}]
    (container,) = out["containerStatuses"]
    assert container["state"] == {"running": {"startedAt": "t1"}}
    assert container["containerID"] == "sim://42"
    assert container["started"] is True


def test_waiting_in_container_creating_is_pending_and_says_why() -> None:
    out = status([ContainerRecord("c", "img", message="waiting for the local IMEX daemon")])
    assert out["phase"] == "Pending"
    ready = next(c for c in out["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    assert ready["reason"] == "ContainersNotReady"
    assert ready["message"] == "containers with unready status: [c]"
    assert out["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "ContainerCreating", "message": "waiting for the local IMEX daemon"}
    }


@pytest.mark.parametrize(
    ("codes", "phase"),
    [((0, 0), "Succeeded"), ((0, 1), "Failed")],
    ids=["all zero", "one failed"],
)
def test_finished_pods(codes: tuple[int, int], phase: str) -> None:
    records = [
        ContainerRecord(
            f"c{i}",
            "img",
            State.TERMINATED,
            "Completed" if code == 0 else "Error",
            exit_code=code,
            will_restart=False,
        )
        for i, code in enumerate(codes)
    ]
    out = status(records)
    assert out["phase"] == phase
    ready = next(c for c in out["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "PodCompleted"


def test_crash_looping_container_keeps_the_pod_running() -> None:
    record = ContainerRecord(
        "c",
        "img",
        State.WAITING,
        "CrashLoopBackOff",
        restart_count=2,
        last_terminated={"exitCode": 1, "reason": "Error"},
    )
    out = status([record])
    assert out["phase"] == "Running"
    assert out["containerStatuses"][0]["lastState"] == {
        "terminated": {"exitCode": 1, "reason": "Error"}
    }
    assert out["containerStatuses"][0]["restartCount"] == 2


def test_init_containers_gate_initialized() -> None:
    init = [ContainerRecord("init", "img", State.RUNNING, "", started_at="t1")]
    out = status([ContainerRecord("c", "img", reason="PodInitializing")], init)
    assert out["phase"] == "Pending"
    assert conditions(out)["Initialized"] == "False"
    failed = [
        ContainerRecord("init", "img", State.TERMINATED, "Error", exit_code=1, will_restart=False)
    ]
    assert status([ContainerRecord("c", "img")], failed)["phase"] == "Failed"


def test_transition_times_move_only_when_the_status_changes() -> None:
    first = status([running(ready=False)])
    again = status([running(ready=False)], old={**pod(), "status": first})
    became_ready = status([running(ready=True)], old={**pod(), "status": first})
    before = {c["type"]: c["lastTransitionTime"] for c in first["conditions"]}
    assert {c["type"]: c["lastTransitionTime"] for c in again["conditions"]} == before
    assert (
        next(c for c in became_ready["conditions"] if c["type"] == "Ready")["lastTransitionTime"]
        == "t2"
    )
