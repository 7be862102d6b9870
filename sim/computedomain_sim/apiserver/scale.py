"""The ``scale`` subresource of Deployments, ReplicaSets and StatefulSets: an
``autoscaling/v1`` ``Scale`` view of ``spec.replicas`` (with ``status.replicas`` and the label
selector as a string), read with GET and changed with PUT or PATCH, as ``kubectl scale`` and
autoscalers use it.

Called by :mod:`.subresources`; the change itself goes through :func:`.writes.replace`, so
validation, ``metadata.generation`` and field ownership behave as for an update of the object.
A custom resource's scale subresource is not served (405).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import managedfields, patching, status, wire, writes
from .registry import ResourceType
from .state import ApiState

__all__ = ["handle", "selector_string"]


def selector_string(selector: Any) -> str:
    """A ``LabelSelector`` in the string form of ``Scale.status.selector`` (requirements
    sorted by key, as apimachinery prints them)."""
    if not isinstance(selector, dict):
        return ""
    parts: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        parts.append((str(key), f"{key}={value}"))
    for expr in selector.get("matchExpressions") or ():
        if not isinstance(expr, dict):
            continue
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or ()))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(op), "")
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts))


def _scale(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": int(spec.get("replicas", 1))},
        "status": {
            "replicas": int((obj.get("status") or {}).get("replicas") or 0),
            "selector": selector_string(spec.get("selector")),
        },
    }


def _set_replicas(
    state: ApiState, rt: ResourceType, where: tuple[str, str], scale: Any, manager: str
) -> dict[str, Any]:
    """Set ``spec.replicas`` of the object at ``where`` (namespace, name) from ``scale``."""
    ns, name = where
    if not isinstance(scale, dict):
        raise status.bad_request("the body of a scale request must be a Scale object")
    current = writes.get_current(state, rt, ns, name)
    obj = current.decode()
    want_rv = (scale.get("metadata") or {}).get("resourceVersion")
    if want_rv and str(want_rv) != obj["metadata"].get("resourceVersion"):
        raise status.conflict(rt.plural, rt.group, name)
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise status.invalid(
            "Scale",
            "autoscaling",
            name,
            [status.invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")],
        )
    obj.setdefault("spec", {})["replicas"] = replicas
    obj["metadata"].pop("resourceVersion", None)
    res = writes.replace(state, rt, current, obj, subresource="scale", manager=manager)
    return _scale(res.entry.decode())


async def handle(
    request: web.BaseRequest, state: ApiState, rt: ResourceType, ns: str, name: str
) -> web.StreamResponse:
    """GET, PUT or PATCH ``<resource>/<name>/scale``."""
    if rt.custom:
        raise status.method_not_allowed(
            "the scale subresource of custom resources is not served by this server"
        )
    method = request.method.upper()
    if method == "GET":
        return wire.json_response(_scale(writes.get_current(state, rt, ns, name).decode()))
    if request.query.get("dryRun"):
        raise status.bad_request(f"dryRun is not supported for {rt.plural}/scale")
    manager = managedfields.of_request(request)
    body = await wire.read_body(request, state.config.max_body_bytes)
    if method == "PUT":
        scale = wire.decode_object(body, request.headers.get("Content-Type", ""))
        return wire.json_response(_set_replicas(state, rt, (ns, name), scale, manager))
    if method == "PATCH":
        old = _scale(writes.get_current(state, rt, ns, name).decode())
        content_type = request.headers.get("Content-Type", "")
        if patching.is_apply(content_type):
            raise status.unsupported_media_type(
                content_type,
                [patching.JSON_PATCH, patching.MERGE, patching.STRATEGIC],
            )
        patched = patching.apply_patch(rt, content_type, old, body)
        return wire.json_response(_set_replicas(state, rt, (ns, name), patched, manager))
    raise status.method_not_allowed(
        "the server does not allow this method on the requested resource (scale)"
    )
