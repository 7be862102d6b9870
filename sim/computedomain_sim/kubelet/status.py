"""The pod status the kubelet reports: phase, conditions and container statuses.

Called by :mod:`.kubelet` whenever a container changes state or a probe flips. Pure: it turns the
kubelet's records of its containers into the ``status`` of the Pod.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

__all__ = ["ContainerRecord", "State", "pod_status"]


class State(enum.StrEnum):
    """A container's state, as in ``containerStatuses[].state``."""

    WAITING = "waiting"
    RUNNING = "running"
    TERMINATED = "terminated"


@attrs.frozen
class ContainerRecord:
    """What the kubelet knows about one container."""

    name: str
    image: str
    state: State = State.WAITING
    reason: str = "ContainerCreating"
    message: str = ""
    pid: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    exit_code: int | None = None
    restart_count: int = 0
    started: bool = False  # the startup probe (if any) has succeeded
    ready: bool = False
    last_terminated: Mapping[str, Any] | None = None
    will_restart: bool = True

    def as_status(self) -> dict[str, Any]:
        """The ``containerStatuses[]`` entry. Pure."""
        if self.state is State.RUNNING:
            state: dict[str, Any] = {"running": {"startedAt": self.started_at}}
        elif self.state is State.TERMINATED:
            state = {"terminated": _terminated(self)}
        else:
            waiting: dict[str, Any] = {"reason": self.reason}
            if self.message:
                waiting["message"] = self.message
            state = {"waiting": waiting}
        out: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "ready": self.ready,
            "started": self.started and self.state is State.RUNNING,
            "restartCount": self.restart_count,
            "state": state,
            "lastState": {"terminated": dict(self.last_terminated)} if self.last_terminated else {},
        }
        if self.pid is not None:
            out["containerID"] = f"sim://{self.pid}"
        return out

    def termination(self) -> dict[str, Any]:
        """This record's ``terminated`` state (for ``lastState`` after a restart). Pure."""
        return _terminated(self)


def _terminated(record: ContainerRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "exitCode": record.exit_code if record.exit_code is not None else 0,
        "reason": record.reason,
        "startedAt": record.started_at,
        "finishedAt": record.finished_at,
    }
    if record.message:
        out["message"] = record.message
    if record.pid is not None:
        out["containerID"] = f"sim://{record.pid}"
    return out


def pod_status(
    pod: Mapping[str, Any],
    init: Sequence[ContainerRecord],
    containers: Sequence[ContainerRecord],
    *,
    pod_ip: str,
    host_ip: str,
    start_time: str,
    now: str,
) -> dict[str, Any]:
    """The new ``status`` of ``pod``. Pure.

    Keeps the scheduler's PodScheduled condition and the resourceClaimStatuses; keeps each
    condition's lastTransitionTime while its status does not change.
    """
    old = pod.get("status") or {}
    init_done = all(r.state is State.TERMINATED and r.exit_code == 0 for r in init)
    init_failed = any(
        r.state is State.TERMINATED and r.exit_code not in (0, None) and not r.will_restart
        for r in init
    )
    all_ready = bool(containers) and all(r.ready for r in containers)
    phase = _phase(init_failed, init_done, containers)
    wanted = {
        "PodReadyToStartContainers": bool(pod_ip),
        "Initialized": init_done,
        "ContainersReady": all_ready and phase == "Running",
        "Ready": all_ready and phase == "Running",
    }
    previous = {c.get("type"): c for c in old.get("conditions") or []}
    conditions: list[dict[str, Any]] = []
    if "PodScheduled" in previous:
        conditions.append(dict(previous["PodScheduled"]))
    for kind, value in wanted.items():
        flag = "True" if value else "False"
        before = previous.get(kind)
        since = before.get("lastTransitionTime") if before and before.get("status") == flag else now
        condition: dict[str, Any] = {"type": kind, "status": flag, "lastTransitionTime": since}
        if not value and kind in ("ContainersReady", "Ready") and containers:
            unready = [r.name for r in containers if not r.ready]
            done = phase in ("Succeeded", "Failed")
            condition["reason"] = "PodCompleted" if done else "ContainersNotReady"
            if condition["reason"] == "ContainersNotReady":
                condition["message"] = f"containers with unready status: [{' '.join(unready)}]"
        elif not value and kind == "Initialized" and init:
            condition["reason"] = "ContainersNotInitialized"
            pending = [
                r.name for r in init if not (r.state is State.TERMINATED and r.exit_code == 0)
            ]
            condition["message"] = f"containers with incomplete status: [{' '.join(pending)}]"
        conditions.append(condition)
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": start_time,
        "containerStatuses": [r.as_status() for r in containers],
    }
    if pod_ip:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    if init:
        status["initContainerStatuses"] = [r.as_status() for r in init]
    if "resourceClaimStatuses" in old:
        status["resourceClaimStatuses"] = old["resourceClaimStatuses"]
    status["qosClass"] = old.get("qosClass", "BestEffort")
    return status


def _phase(init_failed: bool, init_done: bool, containers: Sequence[ContainerRecord]) -> str:
    if init_failed:
        return "Failed"
    if not init_done:
        return "Pending"
    if any(r.state is State.RUNNING for r in containers):
        return "Running"
    if containers and all(r.state is State.TERMINATED and not r.will_restart for r in containers):
        return "Succeeded" if all(r.exit_code == 0 for r in containers) else "Failed"
    if any(r.state is State.TERMINATED or r.restart_count > 0 for r in containers):
        return "Running"
    return "Pending"
