"""Which nodes a pod may run on, and kube-scheduler's words when none fits.

Called by :mod:`.scheduler` (to pick a node for a pending pod) and by
:mod:`computedomain_sim.controllers.daemonset` (a DaemonSet runs a pod on exactly the nodes its
pod template fits). Pure functions over JSON dicts; no I/O.

The filters run in kube-scheduler's order and the first that fails gives the node's reason:
``spec.unschedulable`` (as the ``node.kubernetes.io/unschedulable`` taint), a node that is not
Ready (as the ``node.kubernetes.io/not-ready`` taint the node lifecycle controller adds), the
node's other NoSchedule/NoExecute taints, then ``nodeSelector`` together with the required node
affinity (``matchExpressions`` over labels with In/NotIn/Exists/DoesNotExist/Gt/Lt,
``matchFields`` over ``metadata.name``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "REASON_AFFINITY",
    "REASON_UNSCHEDULABLE",
    "fit_reason",
    "fit_view_changed",
    "node_selector_matches",
    "node_selector_term_matches",
    "taint_reason",
    "tolerates",
    "unschedulable_message",
]

Obj = Mapping[str, Any]

REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def fit_reason(pod: Obj, node: Obj) -> str | None:
    """``None`` if ``pod`` may be placed on ``node``, else the kube-scheduler reason. Pure."""
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    if (node.get("spec") or {}).get("unschedulable") and not tolerates(
        tolerations, {"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"}
    ):
        return REASON_UNSCHEDULABLE
    taint = taint_reason(tolerations, _effective_taints(node))
    if taint is not None:
        return taint
    if not _selector_matches(spec.get("nodeSelector") or {}, _labels(node)):
        return REASON_AFFINITY
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or None
    if required is not None and not node_selector_matches(required, node):
        return REASON_AFFINITY
    return None


def fit_view_changed(old: Obj, new: Obj) -> bool:
    """Whether a node update can change where pods fit: its name, labels, spec (taints,
    unschedulable) or readiness. Heartbeats (a new ``lastHeartbeatTime`` every 10 s per node)
    cannot, so controllers skip them as kube-scheduler and the DaemonSet controller do. Pure."""
    return (
        (old.get("metadata") or {}).get("name") != (new.get("metadata") or {}).get("name")
        or _labels(old) != _labels(new)
        or (old.get("spec") or {}) != (new.get("spec") or {})
        or _is_ready(old) != _is_ready(new)
    )


def unschedulable_message(total_nodes: int, reasons: Iterable[str]) -> str:
    """kube-scheduler's FailedScheduling message, e.g.
    ``0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.`` Pure."""
    if total_nodes == 0:
        return "no nodes available to schedule pods"
    counts = Counter(reasons)
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{total_nodes} nodes are available: {', '.join(parts)}."


def node_selector_matches(selector: Obj, node: Obj) -> bool:
    """A ``NodeSelector`` (terms ORed): true if any term matches ``node``. Pure.

    An empty term list matches nothing, as in Kubernetes.
    """
    terms = selector.get("nodeSelectorTerms") or []
    return any(node_selector_term_matches(term, node) for term in terms)


def node_selector_term_matches(term: Obj, node: Obj) -> bool:
    """One ``NodeSelectorTerm``: all its expressions and fields must match. An empty term
    matches nothing. Pure."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    labels = _labels(node)
    name = str((node.get("metadata") or {}).get("name", ""))
    return all(_requirement(expr, labels) for expr in expressions) and all(
        _requirement(field, {"metadata.name": name}) for field in fields
    )


def tolerates(tolerations: Sequence[Obj], taint: Obj) -> bool:
    """Whether any toleration tolerates ``taint`` (Kubernetes' ToleratesTaint). Pure."""
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists":
            if key == "" or key == taint.get("key"):
                return True
        elif (
            operator == "Equal"
            and key == taint.get("key")
            and (toleration.get("value") or "") == (taint.get("value") or "")
        ):
            return True
    return False


def taint_reason(tolerations: Sequence[Obj], taints: Iterable[Obj]) -> str | None:
    """The reason for the first NoSchedule/NoExecute taint not tolerated, worded as
    kube-scheduler words it (``node(s) had untolerated taint {key: value}``); else None. Pure."""
    for taint in taints:
        if taint.get("effect") not in _BLOCKING_EFFECTS:
            continue
        if not tolerates(tolerations, taint):
            return (
                f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
            )
    return None


def _effective_taints(node: Obj) -> list[Obj]:
    taints = list((node.get("spec") or {}).get("taints") or [])
    if not _is_ready(node) and not any(t.get("key") == TAINT_NOT_READY for t in taints):
        taints.append({"key": TAINT_NOT_READY, "effect": "NoSchedule"})
    return taints


def _is_ready(node: Obj) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def _requirement(expression: Obj, values: Mapping[str, str]) -> bool:
    key = expression.get("key", "")
    operator = expression.get("operator")
    wanted = [str(v) for v in expression.get("values") or []]
    present = key in values
    actual = values.get(key)
    if operator == "In":
        return present and actual in wanted
    if operator == "NotIn":
        return not present or actual not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            left, right = int(str(actual)), int(wanted[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


HOSTNAME_LABEL = "kubernetes.io/hostname"


def pinned_node(pod: Obj) -> str | None:
    """The one node ``pod`` can only run on by name, if it says so: a required node affinity
    of a single term whose ``matchFields`` name one ``metadata.name`` (how DaemonSet pods are
    bound), else a ``kubernetes.io/hostname`` nodeSelector (the kubelet sets that label to the
    node's name). None otherwise. Pure. A hint for narrowing the search: the caller still runs
    every filter on that node."""
    spec = pod.get("spec") or {}
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if len(terms) == 1:
        for field in terms[0].get("matchFields") or []:
            values = field.get("values") or []
            key, operator = field.get("key"), field.get("operator")
            if key == "metadata.name" and operator == "In" and len(values) == 1:
                return str(values[0])
    hostname = (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL)
    return str(hostname) if hostname else None
