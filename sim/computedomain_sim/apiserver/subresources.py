"""Subresources: ``status`` (any kind that has one), ``scale`` (:mod:`.scale`),
``pods/binding``, ``pods/eviction``, ``pods/log`` (:mod:`.podlogs`), ``serviceaccounts/token``
(TokenRequest) and ``namespaces/finalize``.

Called by :mod:`.rest`; uses :mod:`.writes` and :mod:`.deletion` for the actual change.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import (
    conversion,
    deletion,
    managedfields,
    objects,
    podlogs,
    reads,
    scale,
    status,
    wire,
    writes,
)
from .registry import ResourceType
from .requestinfo import RequestInfo
from .state import ApiState


def _success(code: int = 201) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


async def handle(
    request: web.BaseRequest,
    state: ApiState,
    info: RequestInfo,
    *,
    rt: ResourceType,
    srt: ResourceType,
    view: conversion.View,
) -> web.StreamResponse:
    ns = info.namespace if rt.namespaced else ""
    sub = info.subresource
    method = request.method.upper()
    query = request.query
    if sub == "status":
        if method == "GET":
            return wire.raw_response(
                reads.get(state, srt, view, reads.object_key(rt, ns, info.name))
            )
        if method == "PUT":
            body = await wire.read_body(request, state.config.max_body_bytes)
            obj = wire.decode_object(body, request.headers.get("Content-Type", ""))
            if view.id:
                writes.check_kind(rt, obj)
                obj = view.to_storage(obj)
            with writes.dry_run(state, query):
                res = writes.update(
                    state,
                    srt,
                    ns,
                    info.name,
                    obj,
                    subresource="status",
                    manager=managedfields.of_request(request),
                )
            return wire.raw_response(view.render(res.entry.raw), 200, res.warnings)
        if method == "PATCH":
            body = await wire.read_body(request, state.config.max_body_bytes)
            with writes.dry_run(state, query):
                res = writes.patch(
                    state,
                    srt,
                    ns,
                    info.name,
                    content_type=request.headers.get("Content-Type", ""),
                    body=body,
                    subresource="status",
                    view=view,
                    served=rt,
                    manager=managedfields.of_request(request),
                    apply_manager=query.get("fieldManager"),
                    force=query.get("force") == "true",
                )
            return wire.raw_response(view.render(res.entry.raw), 200, res.warnings)
    elif sub == "scale":
        return await scale.handle(request, state, rt, ns, info.name)
    elif method == "GET" and sub == "log":
        return podlogs.respond(request, state, rt, ns, info.name)
    elif query.get("dryRun"):
        raise status.bad_request(f"dryRun is not supported for {rt.plural}/{sub}")
    elif method == "POST" and sub == "binding":
        obj = await _body(request, state)
        _bind(state, rt, ns, info.name, obj)
        return wire.json_response(_success(), 201)
    elif method == "POST" and sub == "eviction":
        obj = await _body(request, state)
        opts = deletion.DeleteOptions.from_json(obj.get("deleteOptions"), query)
        deletion.delete(state, rt, ns, info.name, opts)
        return wire.json_response(_success(), 201)
    elif method == "POST" and sub == "token":
        obj = await _body(request, state)
        return wire.json_response(_token(state, rt, ns, info.name, obj), 201)
    elif method == "PUT" and sub == "finalize":
        obj = await _body(request, state)
        return wire.raw_response(_finalize(state, rt, info.name, obj).raw)
    raise status.method_not_allowed(
        f"the server does not allow this method on the requested resource ({sub})"
    )


async def _body(request: web.BaseRequest, state: ApiState) -> dict[str, Any]:
    raw = await wire.read_body(request, state.config.max_body_bytes)
    return wire.decode_object(raw, request.headers.get("Content-Type", ""))


def _bind(state: ApiState, rt: ResourceType, ns: str, name: str, body: dict[str, Any]) -> None:
    """pods/binding: set spec.nodeName once (409 if already bound) and PodScheduled=True."""
    target = body.get("target") or {}
    node = target.get("name") if isinstance(target, dict) else None
    if not isinstance(node, str) or not node:
        raise status.invalid("Binding", "", name, [status.required("target.name")])
    current = writes.get_current(state, rt, ns, name)
    pod = current.decode()
    spec = pod.setdefault("spec", {})
    if pod["metadata"].get("deletionTimestamp"):
        raise status.conflict(
            "pods", "", name, f"pod {name} is being deleted, cannot be assigned to a host"
        )
    if spec.get("nodeName"):
        raise status.conflict(
            "pods", "", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        )
    want_uid = (body.get("metadata") or {}).get("uid")
    if want_uid and want_uid != current.uid:
        raise status.conflict("pods", "", name, "Precondition failed: UID mismatch")
    spec["nodeName"] = node
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": objects.rfc3339(state.clock()),
        }
    )
    writes.commit(state, rt, current.key, pod)


def _token(
    state: ApiState, rt: ResourceType, ns: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """serviceaccounts/token: issue a bound token through the authenticator."""
    sa = writes.get_current(state, rt, ns, name)
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    expiration = spec.get("expirationSeconds") or 3600
    if not isinstance(expiration, int) or expiration < 600:
        raise status.invalid(
            "TokenRequest",
            "authentication.k8s.io",
            name,
            [
                status.invalid_value(
                    "spec.expirationSeconds",
                    expiration,
                    "may not specify a duration less than 10 minutes",
                )
            ],
        )
    audiences = spec.get("audiences") or []
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise status.invalid(
            "TokenRequest",
            "authentication.k8s.io",
            name,
            [status.invalid_value("spec.audiences", audiences, "must be a list of strings")],
        )
    issuer = state.authenticator
    if issuer is None:
        raise status.service_unavailable("token issuing is not configured on this server")
    token, expires = issuer.issue_service_account_token(
        ns,
        name,
        sa.uid,
        expiration_seconds=expiration,
        audiences=tuple(audiences),
        pod=_bound_pod(state, ns, spec.get("boundObjectRef")),
    )
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": None},
        "spec": {
            "audiences": list(audiences),
            "expirationSeconds": expiration,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {"token": token, "expirationTimestamp": objects.rfc3339(expires)},
    }


def _bound_pod(state: ApiState, ns: str, ref: Any) -> tuple[str, str] | None:
    """(name, uid) of the pod a token is bound to; 404 for a pod that does not exist."""
    if not isinstance(ref, dict) or ref.get("kind") != "Pod":
        return None
    pod_name = str(ref.get("name", ""))
    entry = state.store.get(("", "pods"), f"{ns}/{pod_name}")
    if entry is None or (ref.get("uid") and ref.get("uid") != entry.uid):
        raise status.not_found("pods", "", pod_name)
    return (pod_name, entry.uid)


def _finalize(state: ApiState, rt: ResourceType, name: str, body: dict[str, Any]) -> Any:
    """namespaces/finalize: only spec.finalizers may change."""
    current = writes.get_current(state, rt, "", name)
    obj = current.decode()
    want = (body.get("spec") or {}).get("finalizers") or []
    obj.setdefault("spec", {})["finalizers"] = [f for f in want if isinstance(f, str)]
    meta = obj["metadata"]
    if (
        meta.get("deletionTimestamp")
        and not obj["spec"]["finalizers"]
        and not meta.get("finalizers")
    ):
        writes.commit(state, rt, current.key, obj)
        return writes.commit(state, rt, current.key, None).new
    return writes.commit(state, rt, current.key, obj).new
