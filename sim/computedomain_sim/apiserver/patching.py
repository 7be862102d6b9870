"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902, incl. ``test``) and
strategic merge patch (built-ins only, see :mod:`.strategic`).

The RFC 6902 operations live in :mod:`.jsonpatch` (kustomize patches use them too).
Called by :mod:`.writes`; pure (the input object is not changed); raises
:class:`.status.ApiStatusError` worded as kube-apiserver: 400 for a body that does not parse,
422 for a JSON patch that does not apply, 415 for an unsupported patch type.
"""

from __future__ import annotations

from typing import Any

import yaml

from computedomain.api import jsoncodec

from . import status, strategic
from .jsonpatch import JsonPatchError, json_patch
from .registry import ResourceType

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _decode(body: bytes) -> Any:
    try:
        return jsoncodec.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise status.bad_request(f"error decoding patch: {exc}") from None


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: returns a new document; ``target`` is not changed."""
    if not isinstance(patch, dict):
        return jsoncodec.copy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def is_apply(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == APPLY


def decode_apply(body: bytes) -> dict[str, Any]:
    """The configuration of an apply patch (YAML, of which JSON is a subset)."""
    try:
        config = yaml.safe_load(body.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise status.bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(config, dict):
        raise status.bad_request("an apply patch must be an object")
    return config


def apply_patch(rt: ResourceType, content_type: str, old: dict[str, Any], body: bytes) -> Any:
    """The patched object for a PATCH request; ``old`` is not changed."""
    media = content_type.split(";", 1)[0].strip().lower()
    accepted = [JSON_PATCH, MERGE, APPLY] if rt.custom else [JSON_PATCH, MERGE, STRATEGIC, APPLY]
    if media == MERGE:
        patch = _decode(body)
        if not isinstance(patch, dict):
            raise status.bad_request("json: cannot unmarshal non-object into a merge patch")
        return merge_patch(old, patch)
    if media == JSON_PATCH:
        ops = _decode(body)
        try:
            return json_patch(old, ops)
        except JsonPatchError as exc:
            message = str(exc)
            if message.startswith("testing value"):  # kube-apiserver says only this
                message = "the server rejected our request due to an error in our request"
            raise status.ApiStatusError(422, "Invalid", message, empty_details=True) from None
    if media == STRATEGIC and not rt.custom:
        patch = _decode(body)
        if not isinstance(patch, dict):
            raise status.bad_request(
                "json: cannot unmarshal non-object into a strategic merge patch"
            )
        try:
            return strategic.apply(old, patch)
        except strategic.StrategicError as exc:
            raise status.bad_request(str(exc)) from None
    raise status.unsupported_media_type(content_type, accepted)
