"""Reading a pod's state the way ``kubectl describe`` shows it, in one short phrase.

Phase, node, conditions and container states of a pod JSON dict: whether it is bound,
running, Ready, finished; why the scheduler left it pending (the ``PodScheduled`` condition);
what its containers wait for or died of. Used by :mod:`.workloads` and :mod:`.daemons`. Pure;
bad or missing fields read as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from computedomain.cli.doctor.snapshot import Obj, items, meta, section

MAX_TEXT: Final = 300


def clip(text: str) -> str:
    """One line, at most :data:`MAX_TEXT` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def phase(pod: Obj) -> str:
    return str(section(pod, "status").get("phase") or "Pending")


def node_of(pod: Obj) -> str:
    return str(section(pod, "spec").get("nodeName") or "")


def target_node(pod: Obj) -> str:
    """The node a daemon pod is bound to, or the one its DaemonSet meant it for (the
    ``metadata.name`` field term the DaemonSet controller puts in its node affinity)."""
    node = node_of(pod)
    if node:
        return node
    affinity = section(section(section(pod, "spec"), "affinity"), "nodeAffinity")
    required = section(affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    for term in items(required.get("nodeSelectorTerms")):
        for field in items(term.get("matchFields")):
            values = field.get("values")
            if field.get("key") == "metadata.name" and isinstance(values, list) and values:
                return str(values[0])
    return ""


def finished(pod: Obj) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def terminating(pod: Obj) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def condition(pod: Obj, kind: str) -> Mapping[str, Any] | None:
    for cond in items(section(pod, "status").get("conditions")):
        if cond.get("type") == kind:
            return cond
    return None


def ready(pod: Obj) -> bool:
    """Running with condition Ready=True."""
    cond = condition(pod, "Ready")
    return phase(pod) == "Running" and cond is not None and cond.get("status") == "True"


def unscheduled_message(pod: Obj) -> str | None:
    """Why the scheduler has not placed the pod (``PodScheduled=False``), None when placed or
    when it has not said yet."""
    cond = condition(pod, "PodScheduled")
    if node_of(pod) or cond is None or cond.get("status") != "False":
        return None
    return clip(str(cond.get("message") or cond.get("reason") or "not scheduled"))


def _state_text(state: Mapping[str, Any]) -> str | None:
    for kind in ("waiting", "terminated"):
        detail = state.get(kind)
        if not isinstance(detail, Mapping):
            continue
        reason = str(detail.get("reason") or "")
        message = str(detail.get("message") or "")
        if kind == "terminated" and "exitCode" in detail:
            reason = f"{reason or 'exited'} (exit code {detail['exitCode']})"
        text = ": ".join(part for part in (reason, message) if part)
        if text:
            return clip(text)
    return None


def container_problem(pod: Obj) -> str | None:
    """The first container that is waiting or terminated, as ``name: reason: message``; a
    restarting container adds how its last run ended. None when all run."""
    for container in items(section(pod, "status").get("containerStatuses")):
        state = container.get("state")
        text = _state_text(state) if isinstance(state, Mapping) else None
        if text is None:
            continue
        last = container.get("lastState")
        before = _state_text(last) if isinstance(last, Mapping) else None
        if before and before != text:
            text = f"{text}; last run: {before}"
        return clip(f"container {container.get('name', '?')}: {text}")
    return None


def not_ready_message(pod: Obj) -> str | None:
    """The message of the pod's ``Ready=False`` condition, if it gives one."""
    cond = condition(pod, "Ready")
    if cond is None or cond.get("status") == "True":
        return None
    text = cond.get("message") or cond.get("reason")
    return clip(str(text)) if text else None


def brief(pod: Obj | None) -> str:
    """``Running, Ready``, ``Running, not Ready (CrashLoopBackOff)``, ``Pending
    (Unschedulable)``: the state without the messages, for one line per node."""
    if pod is None:
        return "no pod"
    text = phase(pod) + (", terminating" if terminating(pod) else "")
    if phase(pod) == "Running":
        text += ", Ready" if ready(pod) else ", not Ready"
    if unscheduled_message(pod):
        return f"{text} (Unschedulable)"
    for container in items(section(pod, "status").get("containerStatuses")):
        waiting = section(section(container, "state"), "waiting")
        if waiting.get("reason"):
            return f"{text} ({waiting['reason']})"
    return text


def describe(pod: Obj | None) -> str:
    """``Pending (unschedulable: ...)``, ``Running, not Ready (...)``, ``Running, Ready``."""
    if pod is None:
        return "no pod"
    text = phase(pod)
    if terminating(pod):
        text += ", terminating"
    why = unscheduled_message(pod)
    if why:
        return f"{text} (unschedulable: {why})"
    if phase(pod) == "Running":
        if ready(pod):
            return f"{text}, Ready"
        detail = container_problem(pod) or not_ready_message(pod)
        return f"{text}, not Ready" + (f" ({detail})" if detail else "")
    detail = container_problem(pod)
    return f"{text} ({detail})" if detail else text
