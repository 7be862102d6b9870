"""Channel claims: the readiness gate and the IMEX channel device nodes.

The contract: docs/compatibility.md#channel-claims.

A workload's channel claim may only complete once this node's IMEX daemon of the claim's
ComputeDomain is Ready; until then the prepare is retried (that wait is normal: the daemon pod
only gets scheduled because prepare labelled the node). This module holds the pure decisions:

- :func:`check_namespace`: the claim must live in the domain's namespace (permanent error);
- :func:`assess`: is the local daemon Ready? First the node's entry in the domain's
  ComputeDomainClique ``<cd uid>.<clique id>`` (when the ComputeDomainCliques gate is on and
  the node has a clique), then the node's entry in ``status.nodes`` of the ComputeDomain, which
  counts only while it names the node's current clique: after a clique change
  (docs/compatibility.md#clique-id-refresh) a daemon still registered in the old clique is not
  this node's daemon any more;
- :func:`wait_reason`: the words a user sees on the pod while it waits (which daemon, which
  node, which clique, what state its pod is in);
- :func:`edits`: one char device node per channel, major of ``nvidia-caps-imex-channels``,
  minor = channel id, mode 0666; none on a node without a clique.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from computedomain.api import names
from computedomain.api.errors import PermanentError
from computedomain.kubeletplugin.cdi import CHANNEL_FILE_MODE, ContainerEdits, DeviceNode

READY = "Ready"


@attrs.frozen
class Readiness:
    ready: bool
    source: str  # "clique" | "status" | ""
    entry_status: str | None = None  # the node's entry status where one exists


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def domain_ref(cd: Mapping[str, Any]) -> str:
    """``namespace/name`` of a ComputeDomain object."""
    meta = _meta(cd)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def check_namespace(cd: Mapping[str, Any], claim_namespace: str, field: str) -> None:
    """Raise PermanentError when the claim is not in the domain's namespace."""
    cd_namespace = _meta(cd).get("namespace", "")
    if cd_namespace != claim_namespace:
        raise PermanentError(
            f"{field}: the ResourceClaim's namespace ({claim_namespace}) is different than "
            f"the ComputeDomain's namespace ({cd_namespace})"
        )


def _entry(entries: Any, key: str, node: str) -> Mapping[str, Any] | None:
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get(key) == node:
            return entry
    return None


def assess(
    node: str,
    cd: Mapping[str, Any],
    clique: Mapping[str, Any] | None,
    *,
    cliques_enabled: bool,
    clique_id: str | None = None,
) -> Readiness:
    """Whether this node's daemon of ``cd`` is Ready. Pure; ``clique`` None when absent.

    With ``clique_id`` (the node's current clique), a ``status.nodes`` entry whose ``cliqueID``
    names another clique is stale and not counted."""
    clique_status: str | None = None
    if cliques_enabled and clique is not None:
        entry = _entry(clique.get("daemons"), "nodeName", node)
        if entry is not None:
            clique_status = str(entry.get("status") or "")
            if clique_status == READY:
                return Readiness(True, "clique", clique_status)
    status = cd.get("status")
    entry = _entry(status.get("nodes") if isinstance(status, Mapping) else None, "name", node)
    if (
        entry is not None
        and clique_id is not None
        and entry.get("cliqueID", clique_id) != clique_id
    ):
        return Readiness(False, "status", f"registered in clique {entry.get('cliqueID')!r}")
    if entry is not None and entry.get("status") == READY:
        return Readiness(True, "status", READY)
    if entry is not None:
        return Readiness(False, "status", str(entry.get("status") or ""))
    return Readiness(False, "clique" if clique_status is not None else "", clique_status)


def daemon_pod_state(pod: Mapping[str, Any] | None) -> str:
    """A short description of the daemon pod: ``not scheduled yet``, ``Pending``, ..."""
    if pod is None:
        return "no daemon pod on this node yet"
    raw_status = pod.get("status")
    status: Mapping[str, Any] = raw_status if isinstance(raw_status, Mapping) else {}
    phase = str(status.get("phase") or "Pending")
    if _meta(pod).get("deletionTimestamp"):
        return f"daemon pod {_meta(pod).get('name', '')} terminating"
    raw_conditions = status.get("conditions")
    conditions: list[Any] = raw_conditions if isinstance(raw_conditions, list) else []
    ready = any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )
    if phase == "Running" and not ready:
        return f"daemon pod {_meta(pod).get('name', '')} Running, not Ready"
    if phase == "Running":
        return f"daemon pod {_meta(pod).get('name', '')} Ready, registration pending"
    return f"daemon pod {phase}"


def wait_reason(
    cd: Mapping[str, Any],
    node: str,
    clique_id: str,
    readiness: Readiness,
    pod: Mapping[str, Any] | None,
) -> str:
    """What a waiting channel claim tells its pod. Pure."""
    where = f"clique {clique_id}" if clique_id else "no NVLink clique"
    state = daemon_pod_state(pod)
    if readiness.entry_status:
        state += f", entry {readiness.entry_status}"
    return (
        f"Waiting for the IMEX daemon of ComputeDomain {domain_ref(cd)} on node {node} "
        f"({where}): {state}"
    )


def edits(channels: Sequence[int], major: int, *, clique_id: str) -> ContainerEdits:
    """Device nodes for ``channels``; no edits on a node without a clique. Pure."""
    if not clique_id:
        return ContainerEdits()
    return ContainerEdits(
        device_nodes=tuple(
            DeviceNode(
                path=names.imex_channel_path(channel),
                major=major,
                minor=channel,
                file_mode=CHANNEL_FILE_MODE,
            )
            for channel in channels
        )
    )
