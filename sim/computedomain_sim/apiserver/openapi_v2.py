"""``/openapi/v2``: one Swagger 2.0 document of everything served, in JSON or, for client-go
(which asks for ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and parses the
answer as protobuf whatever its type), as gnostic's protobuf ``Document``
(:mod:`.openapi_proto`).

It carries what the OpenAPI v3 documents carry (:mod:`.openapi`): every resource's paths with
the ``fieldValidation`` parameter and ``x-kubernetes-group-version-kind``, so kubectl and helm
know the server validates fields itself, and the CRD-served kinds' schemas as definitions, in
the v2 form kube-apiserver publishes (no ``nullable``, ``anyOf``/``oneOf``/``allOf``/``not`` or
value validations), with ``metadata`` a reference to ``ObjectMeta`` as kube-apiserver's CRD
builder writes it: kubectl's client-side apply computes its patch from these definitions and
reads ``metadata`` as a struct with patch strategies (its list keys, ``ownerReferences`` merged
by ``uid``), not as a free map. Built-in kinds carry no schema: clients use their compiled-in
types, as against a server whose document lacks them. An ``ETag`` lets clients revalidate (304).
Called by :mod:`.openapi`; the document is computed per request.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from aiohttp import web

from . import openapi_proto, status
from .crds import CRD_KEY
from .registry import ResourceType
from .state import ApiState

__all__ = ["PROTOBUF", "PROTOBUF_ANSWER", "document", "respond", "v2_schema"]

PROTOBUF: Final = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
# What kube-apiserver names the protobuf answer (Go's mime parser refuses the "@" form).
PROTOBUF_ANSWER: Final = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_PROTOBUF_ALIASES: Final = (PROTOBUF, PROTOBUF_ANSWER)
_JSON_TYPES: Final = ("application/json", "application/*", "*/*")
# Keywords kube-apiserver leaves out of a CRD's v2 schema (or v2 does not have).
_DROPPED: Final = frozenset(
    {
        "nullable",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "format",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "multipleOf",
        "minProperties",
        "maxProperties",
        "x-kubernetes-validations",
    }
)
_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META_REF: Final = f"#/definitions/{_META}ObjectMeta"
_STRING: Final = {"type": "string"}
_STRING_MAP: Final = {"type": "object", "additionalProperties": {"type": "string"}}
# The metav1 definitions a CRD kind's schema refers to, with the fields and patch strategies of
# k8s.io/apimachinery's types (descriptions left out).
_META_DEFINITIONS: Final = {
    f"{_META}ObjectMeta": {
        "type": "object",
        "properties": {
            "annotations": _STRING_MAP,
            "creationTimestamp": {"$ref": f"#/definitions/{_META}Time"},
            "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
            "deletionTimestamp": {"$ref": f"#/definitions/{_META}Time"},
            "finalizers": {
                "type": "array",
                "items": _STRING,
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            },
            "generateName": _STRING,
            "generation": {"type": "integer", "format": "int64"},
            "labels": _STRING_MAP,
            "managedFields": {
                "type": "array",
                "items": {"$ref": f"#/definitions/{_META}ManagedFieldsEntry"},
                "x-kubernetes-list-type": "atomic",
            },
            "name": _STRING,
            "namespace": _STRING,
            "ownerReferences": {
                "type": "array",
                "items": {"$ref": f"#/definitions/{_META}OwnerReference"},
                "x-kubernetes-list-map-keys": ["uid"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "uid",
                "x-kubernetes-patch-strategy": "merge",
            },
            "resourceVersion": _STRING,
            "selfLink": _STRING,
            "uid": _STRING,
        },
    },
    f"{_META}OwnerReference": {
        "type": "object",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": _STRING,
            "blockOwnerDeletion": {"type": "boolean"},
            "controller": {"type": "boolean"},
            "kind": _STRING,
            "name": _STRING,
            "uid": _STRING,
        },
        "x-kubernetes-map-type": "atomic",
    },
    f"{_META}ManagedFieldsEntry": {
        "type": "object",
        "properties": {
            "apiVersion": _STRING,
            "fieldsType": _STRING,
            "fieldsV1": {"$ref": f"#/definitions/{_META}FieldsV1"},
            "manager": _STRING,
            "operation": _STRING,
            "subresource": _STRING,
            "time": {"$ref": f"#/definitions/{_META}Time"},
        },
    },
    f"{_META}FieldsV1": {"type": "object"},
    f"{_META}Time": {"type": "string", "format": "date-time"},
}
_PATCH_TYPES: Final = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
]


def _gv_path(rt: ResourceType) -> str:
    return f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"


def _param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "type": "string", "uniqueItems": True}


def _patch_types(rt: ResourceType) -> list[str]:
    """What a PATCH consumes: custom resources take no strategic merge patch (415), so their
    operations do not list it, and kubectl's client-side apply then sends a merge patch."""
    if rt.custom:
        return [t for t in _PATCH_TYPES if t != "application/strategic-merge-patch+json"]
    return _PATCH_TYPES


def _operation(rt: ResourceType, action: str, op_id: str) -> dict[str, Any]:
    params = [_param("dryRun"), _param("fieldManager")]
    if action in ("post", "put", "patch"):
        params.append(_param("fieldValidation"))
    op: dict[str, Any] = {
        "operationId": op_id,
        "produces": ["application/json"],
        "consumes": _patch_types(rt) if action == "patch" else ["*/*"],
        "parameters": params,
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": rt.group,
            "version": rt.version,
            "kind": rt.kind,
        },
    }
    if rt.group or rt.version:
        op["tags"] = [f"{rt.group or 'core'}_{rt.version}"]
    return op


def _paths(rt: ResourceType) -> dict[str, Any]:
    base = _gv_path(rt)
    collection = (
        f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
    )
    name = f"{rt.kind}{'Namespaced' if rt.namespaced else ''}"
    return {
        collection: {
            "get": _operation(rt, "list", f"list{name}"),
            "post": _operation(rt, "post", f"create{name}"),
        },
        f"{collection}/{{name}}": {
            "get": _operation(rt, "get", f"read{name}"),
            "put": _operation(rt, "put", f"replace{name}"),
            "patch": _operation(rt, "patch", f"patch{name}"),
            "delete": _operation(rt, "delete", f"delete{name}"),
        },
    }


def v2_schema(schema: Any) -> Any:
    """A CRD's structural (OpenAPI v3) schema in the v2 form kube-apiserver publishes. Pure."""
    if isinstance(schema, list):
        return [v2_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: v2_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, (dict, list)):
            out[key] = v2_schema(value)
        else:
            out[key] = value
    return out


def _definitions(state: ApiState) -> dict[str, Any]:
    definitions: dict[str, Any] = dict(_META_DEFINITIONS)
    for key in state.store.keys(CRD_KEY):
        entry = state.store.get(CRD_KEY, key)
        if entry is None:
            continue
        spec = entry.decode().get("spec") or {}
        group = str(spec.get("group", ""))
        kind = str((spec.get("names") or {}).get("kind", ""))
        reverse = ".".join(reversed(group.split(".")))
        for v in spec.get("versions") or ():
            if not isinstance(v, dict) or not v.get("served", True):
                continue
            schema = (v.get("schema") or {}).get("openAPIV3Schema")
            if not isinstance(schema, dict):
                continue
            published = v2_schema(schema)
            published["properties"] = {
                **(published.get("properties") or {}),
                "metadata": {"$ref": OBJECT_META_REF},
            }
            definitions[f"{reverse}.{v.get('name')}.{kind}"] = {
                **published,
                "x-kubernetes-group-version-kind": [
                    {"group": group, "version": v.get("name"), "kind": kind}
                ],
            }
    return definitions


def document(state: ApiState) -> dict[str, Any]:
    """The whole Swagger 2.0 document. Pure given the state."""
    paths: dict[str, Any] = {}
    for group, versions in state.registry.groups().items():
        for version in versions:
            for rt in sorted(
                state.registry.in_group_version(group, version), key=lambda r: r.plural
            ):
                paths.update(_paths(rt))
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.37.2"},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(_definitions(state).items())),
    }


def _wants(accept: str) -> str | None:
    """``protobuf``, ``json`` or None (nothing the endpoint can answer) for an Accept header."""
    types = [part.split(";", 1)[0].strip().lower() for part in accept.split(",")]
    types = [t for t in types if t]
    if not types:
        return "json"
    for media in types:
        if media in _PROTOBUF_ALIASES:
            return "protobuf"
        if media in _JSON_TYPES:
            return "json"
    return None


def respond(request: web.BaseRequest, state: ApiState) -> web.StreamResponse:
    """GET ``/openapi/v2``: JSON or protobuf by the Accept header; 406 for anything else."""
    wants = _wants(request.headers.get("Accept", ""))
    if wants is None:
        raise status.ApiStatusError(
            406,
            "NotAcceptable",
            f"only the following media types are accepted: application/json, {PROTOBUF}",
        )
    doc = document(state)
    if wants == "protobuf":
        body, content_type = openapi_proto.encode(doc), PROTOBUF_ANSWER
    else:
        body, content_type = json.dumps(doc, separators=(",", ":")).encode(), "application/json"
    etag = '"' + hashlib.sha256(body).hexdigest()[:32].upper() + '"'
    headers = {"ETag": etag, "Vary": "Accept", "Cache-Control": "no-cache, private"}
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, headers={**headers, "Content-Type": content_type})
