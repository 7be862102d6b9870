"""OpenAPI v3 discovery and per-group-version documents (``/openapi/v3``,
``/openapi/v3/apis/{group}/{version}``); ``/openapi/v2`` is :mod:`.openapi_v2`'s.

What the documents carry is what kubectl needs from them: every resource's paths with the
``fieldValidation`` query parameter and ``x-kubernetes-group-version-kind`` (so kubectl knows
the server validates fields itself and sends ``fieldValidation=Strict`` instead of validating
client-side), and, for CRD-served kinds, their structural schema (``kubectl explain``).
Built-in kinds carry no schema, so ``kubectl apply`` computes strategic merge patches from
its compiled-in types, exactly as it does against a server without OpenAPI. Called by
:mod:`.app`; pure.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aiohttp import web

from . import openapi_v2, status, wire
from .crds import CRD_KEY
from .registry import ResourceType
from .state import ApiState

_NOT_FOUND = "the server could not find the requested resource"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _gvk(rt: ResourceType) -> list[dict[str, str]]:
    return [{"group": rt.group, "version": rt.version, "kind": rt.kind}]


def _param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _operation(rt: ResourceType, action: str, op_id: str) -> dict[str, Any]:
    params = [_param("dryRun"), _param("fieldManager")]
    if action in ("post", "put", "patch"):
        params.append(_param("fieldValidation"))
    return {
        "operationId": op_id,
        "parameters": params,
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rt)[0],
    }


def _paths(rt: ResourceType) -> dict[str, Any]:
    base = "/" + _gv_path(rt.group, rt.version)
    collection = (
        f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
    )
    item = f"{collection}/{{name}}"
    kind = rt.kind
    return {
        collection: {
            "get": _operation(rt, "list", f"list{kind}"),
            "post": _operation(rt, "post", f"create{kind}"),
        },
        item: {
            "get": _operation(rt, "get", f"read{kind}"),
            "put": _operation(rt, "put", f"replace{kind}"),
            "patch": _operation(rt, "patch", f"patch{kind}"),
            "delete": _operation(rt, "delete", f"delete{kind}"),
        },
    }


def _crd_schemas(state: ApiState, group: str, version: str) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for key in state.store.keys(CRD_KEY):
        entry = state.store.get(CRD_KEY, key)
        if entry is None:
            continue
        spec = entry.decode().get("spec") or {}
        if spec.get("group") != group:
            continue
        for v in spec.get("versions") or ():
            if not isinstance(v, dict) or v.get("name") != version:
                continue
            schema = (v.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(schema, dict):
                kind = (spec.get("names") or {}).get("kind", "")
                reverse = ".".join(reversed(group.split(".")))
                schemas[f"{reverse}.{version}.{kind}"] = {
                    **schema,
                    "x-kubernetes-group-version-kind": [
                        {"group": group, "version": version, "kind": kind}
                    ],
                }
    return schemas


def document(state: ApiState, group: str, version: str) -> dict[str, Any]:
    types = state.registry.in_group_version(group, version)
    if not types:
        raise status.ApiStatusError(404, "NotFound", _NOT_FOUND)
    paths: dict[str, Any] = {}
    for rt in sorted(types, key=lambda r: r.plural):
        paths.update(_paths(rt))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths,
        "components": {"schemas": _crd_schemas(state, group, version)},
    }


def respond(request: web.BaseRequest, state: ApiState) -> web.StreamResponse:
    path = request.path.rstrip("/")
    if path == "/openapi/v2":
        return openapi_v2.respond(request, state)
    if path == "/openapi/v3":
        paths = {}
        for group, versions in state.registry.groups().items():
            for version in versions:
                doc = document(state, group, version)
                digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
                gv = _gv_path(group, version)
                paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest.upper()}"}
        return wire.json_response({"paths": paths})
    if path.startswith("/openapi/v3/"):
        parts = path[len("/openapi/v3/") :].split("/")
        if parts[0] == "api" and len(parts) == 2:
            return wire.json_response(document(state, "", parts[1]))
        if parts[0] == "apis" and len(parts) == 3:
            return wire.json_response(document(state, parts[1], parts[2]))
    raise status.ApiStatusError(404, "NotFound", _NOT_FOUND)
