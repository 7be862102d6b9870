"""A Swagger 2.0 document (the JSON form :mod:`.openapi_v2` builds) as gnostic's protobuf
``openapi.v2.Document``, the form client-go's ``OpenAPISchema`` parses.

The message types come from the descriptors compiled at build time (:mod:`.protodescriptors`).
Only what the document holds is mapped: info, paths with their operations (query parameters,
responses, vendor extensions) and definitions (schemas with ``$ref``, type, properties,
items, additionalProperties, required, enum, default, description and vendor extensions).
Vendor extensions and free values (``default``, ``enum``, ``example``) are gnostic ``Any``
messages holding the value as YAML, as gnostic writes them. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from google.protobuf import message_factory

from . import protodescriptors

__all__ = ["decode", "encode"]

_PACKAGE = "openapi.v2."
_SCHEMA_STRINGS = {
    "$ref": "_ref",
    "format": "format",
    "title": "title",
    "description": "description",
    "pattern": "pattern",
    "discriminator": "discriminator",
}
_SCHEMA_NUMBERS = {
    "multipleOf": "multiple_of",
    "maximum": "maximum",
    "minimum": "minimum",
    "maxLength": "max_length",
    "minLength": "min_length",
    "maxItems": "max_items",
    "minItems": "min_items",
    "maxProperties": "max_properties",
    "minProperties": "min_properties",
}
_SCHEMA_FLAGS = {
    "exclusiveMaximum": "exclusive_maximum",
    "exclusiveMinimum": "exclusive_minimum",
    "uniqueItems": "unique_items",
    "readOnly": "read_only",
}
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")


def _new(name: str) -> Any:
    pool = protodescriptors.load()
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(_PACKAGE + name))()


def _yaml(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=False)


def _any(target: Any, value: Any) -> None:
    target.yaml = _yaml(value)


def _extensions(target: Any, obj: Mapping[str, Any]) -> None:
    for key, value in obj.items():
        if key.startswith("x-"):
            named = target.add()
            named.name = key
            _any(named.value, value)


def _schema(target: Any, schema: Mapping[str, Any]) -> None:
    for key, field in _SCHEMA_STRINGS.items():
        if isinstance(schema.get(key), str):
            setattr(target, field, schema[key])
    for key, field in _SCHEMA_NUMBERS.items():
        if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool):
            setattr(target, field, schema[key])
    for key, field in _SCHEMA_FLAGS.items():
        if isinstance(schema.get(key), bool):
            setattr(target, field, schema[key])
    kind = schema.get("type")
    if isinstance(kind, str):
        target.type.value.append(kind)
    elif isinstance(kind, list):
        target.type.value.extend(str(k) for k in kind)
    target.required.extend(str(r) for r in schema.get("required") or ())
    for value in schema.get("enum") or ():
        _any(target.enum.add(), value)
    for key, field in (("default", "default"), ("example", "example")):
        if key in schema:
            _any(getattr(target, field), schema[key])
    for name, sub in (schema.get("properties") or {}).items():
        named = target.properties.additional_properties.add()
        named.name = name
        _schema(named.value, sub if isinstance(sub, dict) else {})
    items = schema.get("items")
    for item in items if isinstance(items, list) else [items] if isinstance(items, dict) else []:
        _schema(target.items.schema.add(), item)
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        target.additional_properties.boolean = extra
    elif isinstance(extra, dict):
        _schema(target.additional_properties.schema, extra)
    _extensions(target.vendor_extension, schema)


def _operation(target: Any, op: Mapping[str, Any]) -> None:
    target.tags.extend(op.get("tags") or ())
    for key, field in (("summary", "summary"), ("description", "description"),
                       ("operationId", "operation_id")):  # fmt: skip
        if isinstance(op.get(key), str):
            setattr(target, field, op[key])
    target.produces.extend(op.get("produces") or ())
    target.consumes.extend(op.get("consumes") or ())
    for param in op.get("parameters") or ():
        query = target.parameters.add().parameter.non_body_parameter.query_parameter_sub_schema
        query.name = str(param.get("name", ""))
        setattr(query, "in", str(param.get("in", "query")))
        query.type = str(param.get("type", "string"))
        query.unique_items = bool(param.get("uniqueItems", False))
        if param.get("description"):
            query.description = str(param["description"])
    for code, response in (op.get("responses") or {}).items():
        named = target.responses.response_code.add()
        named.name = str(code)
        named.value.response.description = str((response or {}).get("description", ""))
    _extensions(target.vendor_extension, op)


def encode(document: Mapping[str, Any]) -> bytes:
    """The protobuf bytes of a Swagger 2.0 document. Raises DescriptorsMissing."""
    doc = _new("Document")
    doc.swagger = str(document.get("swagger", "2.0"))
    info = document.get("info") or {}
    doc.info.title = str(info.get("title", ""))
    doc.info.version = str(info.get("version", ""))
    for path, item in (document.get("paths") or {}).items():
        named = doc.paths.path.add()
        named.name = path
        for method in _METHODS:
            if isinstance(item.get(method), dict):
                _operation(getattr(named.value, method), item[method])
    for name, schema in (document.get("definitions") or {}).items():
        named = doc.definitions.additional_properties.add()
        named.name = name
        _schema(named.value, schema)
    _extensions(doc.vendor_extension, document)
    data: bytes = doc.SerializeToString(deterministic=True)
    return data


def decode(data: bytes) -> Any:
    """The ``openapi.v2.Document`` message of ``data`` (for tests and tools)."""
    doc = _new("Document")
    doc.ParseFromString(data)
    return doc
