"""The daemon's own pod: its readiness, its clique label, and how events refer to it.

Readiness comes from the pod's Ready condition, which the kubelet sets from the ``check``
probes (docs/compatibility.md#probes): the daemon never asks ``nvidia-imex`` itself.
:func:`pod_ready` and :func:`desired_status` are pure and used by
:mod:`computedomain.daemon.reconcile`; :func:`label_with_clique` is the startup patch that the
controller classifies daemon pods by; :func:`annotate_problem` publishes a host problem for the
controller's Ready condition (:mod:`computedomain.daemon.problems`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from computedomain.api import names
from computedomain.api.models import Status
from computedomain.daemon.identity import Identity
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api, PatchType
from computedomain.runtime import logs

log = logs.get_logger(__name__)


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Phase Running and condition Ready=True (a missing condition is not ready). Pure."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    )


def desired_status(pod: Mapping[str, Any] | None, *, blocked: bool) -> Status | None:
    """The status the own entry should carry; None while the pod has not been seen. Pure.

    ``blocked``: a host conflict keeps nvidia-imex from running, so the entry stays NotReady
    whatever the pod says.
    """
    if pod is None:
        return None
    return Status.READY if pod_ready(pod) and not blocked else Status.NOT_READY


def reference(identity: Identity) -> dict[str, Any]:
    """The own pod as an object reference for events. Pure."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": identity.pod_name,
            "namespace": identity.pod_namespace,
            "uid": identity.pod_uid,
        },
    }


async def label_with_clique(api: Api, identity: Identity) -> None:
    """Merge-patch the clique label (possibly "") onto the own pod, and remove a problem
    annotation a previous run of the container left (a fresh ``nvidia-imex`` has none yet).
    Idempotent; raises ApiError."""
    await _patch_own_pod(
        api,
        identity,
        {
            "labels": {names.CLIQUE_LABEL: identity.clique_id},
            "annotations": {names.DAEMON_PROBLEM_ANNOTATION: None},
        },
    )


def problem_text(reason: str, message: str) -> str:
    """The problem annotation's value: ``<Reason>: <message>``. Pure."""
    return f"{reason}: {message}"


async def annotate_problem(api: Api, identity: Identity, text: str | None) -> None:
    """Merge-patch the problem annotation onto the own pod (None removes it). Idempotent;
    raises ApiError."""
    await _patch_own_pod(api, identity, {"annotations": {names.DAEMON_PROBLEM_ANNOTATION: text}})


# The startup patch has no resourceVersion precondition, so a 409 (an API server that ran out
# of internal update retries, or an injected fault) means only "try again": the same patch
# applies to whatever the pod is now.
TRANSIENT = (
    errors.ApiServerError,
    errors.TooManyRequests,
    errors.ApiConnectionError,
    errors.Conflict,
)


async def label_patiently(
    api: Api,
    identity: Identity,
    *,
    within: float = 30.0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """:func:`label_with_clique`, retrying transient API errors (5xx, 429, 409, connection) with
    back-off for up to ``within`` seconds: a daemon that exits on a blip is restarted with the
    kubelet's crash back-off and looks crash-looping (found by the cluster fault run). Raises
    the last error after ``within``, and any other ApiError at once."""
    delay, waited = 0.2, 0.0
    while True:
        try:
            await label_with_clique(api, identity)
            return
        except TRANSIENT as exc:
            if waited + delay > within:
                raise
            log.warning("Labelling the own pod failed; retrying", error=str(exc), in_s=delay)
            await sleep(delay)
            waited += delay
            delay = min(delay * 2, 5.0)


async def _patch_own_pod(api: Api, identity: Identity, metadata: dict[str, Any]) -> None:
    """Merge-patch ``metadata`` onto the daemon's own pod. Raises ApiError."""
    await api.patch(
        resources.PODS,
        identity.pod_name,
        {"metadata": metadata},
        namespace=identity.pod_namespace,
        patch_type=PatchType.MERGE,
    )
