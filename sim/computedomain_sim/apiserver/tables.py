"""``meta.k8s.io/v1`` Table responses for ``kubectl get`` (server-side printing).

kubectl asks for ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io, application/json``;
when the client accepts a Table, GET and LIST answer with one. Columns: pods, nodes,
namespaces and daemonsets like kube-apiserver; CRD-served kinds use their
``additionalPrinterColumns`` (or NAME/AGE); every other kind NAME/AGE. Called by
:mod:`.rest`; pure apart from reading the clock.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any

from aiohttp import web

from . import objects, wire
from .registry import ResourceType
from .state import ApiState

TABLE_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"
Row = Callable[[dict[str, Any], dt.datetime], list[Any]]


def wants_table(request: web.BaseRequest) -> bool:
    accept = request.headers.get("Accept", "")
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if (
            "as=Table" in params
            and "g=meta.k8s.io" in params
            and ("v=v1" in params or "v=v1beta1" in params)
        ):
            return True
    return False


def human_duration(seconds: float) -> str:
    """apimachinery's HumanDuration (``5m``, ``2d3h`` …)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def _age(obj: dict[str, Any], now: dt.datetime) -> str:
    t = objects.parse_time(str((obj.get("metadata") or {}).get("creationTimestamp", "")))
    return "<unknown>" if t is None else human_duration((now - t).total_seconds())


def _col(name: str, type_: str = "string", priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": "", "priority": priority}


def _pod(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec, st = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    statuses = st.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = st.get("reason") or st.get("phase") or "Unknown"
    for c in statuses:
        waiting = (c.get("state") or {}).get("waiting")
        terminated = (c.get("state") or {}).get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated and terminated.get("reason"):
            reason = terminated["reason"]
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    ips = st.get("podIP") or "<none>"
    return [
        obj["metadata"]["name"], f"{ready}/{len(containers)}", reason, restarts, _age(obj, now),
        ips, spec.get("nodeName") or "<none>", st.get("nominatedNodeName") or "<none>", "<none>",
    ]  # fmt: skip


def _node(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    conds = (obj.get("status") or {}).get("conditions") or []
    ready = next((c for c in conds if c.get("type") == "Ready"), None)
    state = (
        "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    )
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = (obj.get("metadata") or {}).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    info = (obj.get("status") or {}).get("nodeInfo") or {}
    return [
        obj["metadata"]["name"], state, ",".join(roles) or "<none>", _age(obj, now),
        info.get("kubeletVersion", ""),
    ]  # fmt: skip


def _namespace(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], (obj.get("status") or {}).get("phase", ""), _age(obj, now)]


def _daemonset(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    st = obj.get("status") or {}
    selector = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector")
    sel = ",".join(f"{k}={v}" for k, v in (selector or {}).items()) or "<none>"
    return [
        obj["metadata"]["name"], st.get("desiredNumberScheduled", 0),
        st.get("currentNumberScheduled", 0), st.get("numberReady", 0),
        st.get("updatedNumberScheduled", 0), st.get("numberAvailable", 0), sel, _age(obj, now),
    ]  # fmt: skip


def _deployment(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    st = obj.get("status") or {}
    wanted = (obj.get("spec") or {}).get("replicas", 1)
    return [
        obj["metadata"]["name"], f"{st.get('readyReplicas', 0)}/{wanted}",
        st.get("updatedReplicas", 0), st.get("availableReplicas", 0), _age(obj, now),
    ]  # fmt: skip


def _replicaset(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    st = obj.get("status") or {}
    return [
        obj["metadata"]["name"], (obj.get("spec") or {}).get("replicas", 1),
        st.get("replicas", 0), st.get("readyReplicas", 0), _age(obj, now),
    ]  # fmt: skip


def _since(obj: dict[str, Any], value: Any, now: dt.datetime) -> str:
    t = objects.parse_time(str(value or ""))
    return _age(obj, now) if t is None else human_duration((now - t).total_seconds())


def _event(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    inv = obj.get("involvedObject") or {}
    seen = obj.get("lastTimestamp") or obj.get("eventTime")
    target = f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}"
    return [_since(obj, seen, now), obj.get("type", ""), obj.get("reason", ""), target,
            obj.get("message", "")]  # fmt: skip


def _claim(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    st = obj.get("status") or {}
    state = [
        word
        for word, present in (
            ("deleted", (obj.get("metadata") or {}).get("deletionTimestamp")),
            ("allocated", st.get("allocation")),
            ("reserved", st.get("reservedFor")),
        )
        if present
    ]
    return [obj["metadata"]["name"], ",".join(state) or "pending", _age(obj, now)]


def _slice(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    return [obj["metadata"]["name"], spec.get("nodeName") or "<none>", spec.get("driver", ""),
            (spec.get("pool") or {}).get("name", ""), _age(obj, now)]  # fmt: skip


def _lease(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    holder = (obj.get("spec") or {}).get("holderIdentity") or ""
    return [obj["metadata"]["name"], holder, _age(obj, now)]


def _configmap(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [obj["metadata"]["name"], count, _age(obj, now)]


def _secret(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], obj.get("type", ""), len(obj.get("data") or {}),
            _age(obj, now)]  # fmt: skip


def _crd(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp", "")]


_BUILTIN: dict[tuple[str, str], tuple[list[dict[str, Any]], Row]] = {
    ("", "events"): (
        [_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")],
        _event,
    ),
    ("resource.k8s.io", "resourceclaims"): (
        [_col("Name", fmt="name"), _col("State"), _col("Age")], _claim,
    ),
    ("resource.k8s.io", "resourceslices"): (
        [_col("Name", fmt="name"), _col("Node"), _col("Driver"), _col("Pool"), _col("Age")],
        _slice,
    ),
    ("coordination.k8s.io", "leases"): (
        [_col("Name", fmt="name"), _col("Holder"), _col("Age")], _lease,
    ),
    ("", "configmaps"): ([_col("Name", fmt="name"), _col("Data", "integer"), _col("Age")],
                         _configmap),
    ("", "secrets"): (
        [_col("Name", fmt="name"), _col("Type"), _col("Data", "integer"), _col("Age")], _secret,
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        [_col("Name", fmt="name"), _col("Created At", "date")], _crd,
    ),
    ("", "pods"): (
        [_col("Name", fmt="name"), _col("Ready"), _col("Status"), _col("Restarts", "integer"),
         _col("Age"), _col("IP", priority=1), _col("Node", priority=1),
         _col("Nominated Node", priority=1), _col("Readiness Gates", priority=1)],
        _pod,
    ),
    ("", "nodes"): (
        [_col("Name", fmt="name"), _col("Status"), _col("Roles"), _col("Age"), _col("Version")],
        _node,
    ),
    ("", "namespaces"): ([_col("Name", fmt="name"), _col("Status"), _col("Age")], _namespace),
    ("apps", "daemonsets"): (
        [_col("Name", fmt="name"), _col("Desired", "integer"), _col("Current", "integer"),
         _col("Ready", "integer"), _col("Up-to-date", "integer"), _col("Available", "integer"),
         _col("Node Selector"), _col("Age")],
        _daemonset,
    ),
    ("apps", "deployments"): (
        [_col("Name", fmt="name"), _col("Ready"), _col("Up-to-date", "integer"),
         _col("Available", "integer"), _col("Age")],
        _deployment,
    ),
    ("apps", "replicasets"): (
        [_col("Name", fmt="name"), _col("Desired", "integer"), _col("Current", "integer"),
         _col("Ready", "integer"), _col("Age")],
        _replicaset,
    ),
}  # fmt: skip

_PATH_PART = re.compile(r"\.([A-Za-z0-9_\-]+)|\[(\d+|\*)\]")


def json_path(obj: Any, path: str) -> Any:
    """A small JSONPath subset (``.a.b``, ``.a[0].b``, ``.a[*].b``) as printer columns use."""
    values = [obj]
    for m in _PATH_PART.finditer(path.strip().lstrip("{").rstrip("}")):
        field, idx = m.group(1), m.group(2)
        nxt: list[Any] = []
        for v in values:
            if field is not None and isinstance(v, dict) and field in v:
                nxt.append(v[field])
            elif idx == "*" and isinstance(v, list):
                nxt.extend(v)
            elif idx is not None and idx != "*" and isinstance(v, list) and int(idx) < len(v):
                nxt.append(v[int(idx)])
        values = nxt
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _columns(rt: ResourceType) -> tuple[list[dict[str, Any]], Row]:
    builtin = _BUILTIN.get((rt.group, rt.plural))
    if builtin is not None:
        return builtin
    if rt.printer_columns:
        cols = [_col("Name", fmt="name")]
        specs = rt.printer_columns
        for name, type_, _path, prio in specs:
            cols.append(_col(name, "string" if type_ == "date" else type_, prio))

        def row(obj: dict[str, Any], now: dt.datetime) -> list[Any]:
            cells: list[Any] = [obj["metadata"]["name"]]
            for _name, type_, path, _prio in specs:
                value = json_path(obj, path)
                if type_ == "date" and isinstance(value, str):
                    t = objects.parse_time(value)
                    value = human_duration((now - t).total_seconds()) if t else value
                elif isinstance(value, (dict, list)):
                    value = json.dumps(value, separators=(",", ":"))
                cells.append(value)
            return cells

        return cols, row
    return [_col("Name", fmt="name"), _col("Age")], lambda o, now: [
        o["metadata"]["name"],
        _age(o, now),
    ]


def _partial(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def _table(
    request: web.BaseRequest,
    state: ApiState,
    rt: ResourceType,
    items: list[dict[str, Any]],
    meta: dict[str, Any],
) -> web.Response:
    cols, row = _columns(rt)
    now = state.clock()
    include = request.query.get("includeObject", "Metadata")
    rows = []
    for obj in items:
        r: dict[str, Any] = {"cells": row(obj, now)}
        if include == "Object":
            r["object"] = obj
        elif include != "None":
            r["object"] = _partial(obj)
        rows.append(r)
    table = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": cols,
        "rows": rows,
    }
    resp = wire.json_response(table)
    resp.content_type = "application/json"
    resp.headers["Content-Type"] = TABLE_TYPE
    return resp


def respond_object(
    request: web.BaseRequest, state: ApiState, rt: ResourceType, raw: bytes
) -> web.Response:
    if not wants_table(request):
        return wire.raw_response(raw)
    obj = json.loads(raw)
    return _table(
        request, state, rt, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
    )


def respond_list(
    request: web.BaseRequest, state: ApiState, rt: ResourceType, body: bytes
) -> web.Response:
    if not wants_table(request):
        return wire.raw_response(body)
    lst = json.loads(body)
    return _table(request, state, rt, lst.get("items") or [], lst.get("metadata") or {})
