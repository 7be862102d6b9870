"""Strategic merge patch for built-in kinds, with the merge keys of the Go types our
components and kubectl rely on.

Lists named in :data:`MERGE_KEYS` merge element-wise by their key; lists in
:data:`PRIMITIVE_MERGE` (e.g. ``finalizers``) merge as sets; every other list is replaced.
Directives: ``$patch: replace|delete|merge`` (maps and list elements), ``$retainKeys``,
``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>`` (sent by
``kubectl apply``). Called by :mod:`.patching`; pure; raises :class:`StrategicError`.
"""

from __future__ import annotations

from typing import Any

from computedomain.api import jsoncodec

# field name -> merge key (patchMergeKey in the Go types, patchStrategy "merge")
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "conditions": "type",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "resourceClaimStatuses": "name",
    "schedulingGates": "name",
    "podIPs": "ip",
    "hostIPs": "ip",
    "addresses": "type",
    "reservedFor": "uid",
}
PRIMITIVE_MERGE = frozenset({"finalizers"})


class StrategicError(ValueError):
    pass


_DELETE = object()


def apply(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """The strategic merge of ``patch`` into a copy of ``original``."""
    out = _merge_map(jsoncodec.copy(original), patch)
    if out is _DELETE:
        return {}
    assert isinstance(out, dict)
    return out


def _merge_map(original: Any, patch: dict[str, Any]) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return {k: jsoncodec.copy(v) for k, v in patch.items() if k != "$patch"}
    if directive not in (None, "merge"):
        msg = f"Unknown patch type: {directive!r}"
        raise StrategicError(msg)
    result = dict(original) if isinstance(original, dict) else {}
    orders: dict[str, list[Any]] = {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            if not isinstance(value, list):
                msg = f"invalid $setElementOrder for {key}"
                raise StrategicError(msg)
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            current = result.get(field)
            if isinstance(current, list) and isinstance(value, list):
                result[field] = [v for v in current if v not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        if isinstance(value, dict):
            merged = _merge_map(result.get(key), value)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = value
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _reorder(field, result[field], order)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, original: Any, patch: list[Any]) -> list[Any]:
    if field in PRIMITIVE_MERGE:
        base = list(original) if isinstance(original, list) else []
        for v in patch:
            if v not in base:
                base.append(v)
        return base
    key = MERGE_KEYS.get(field)
    if key is None or not isinstance(original, list):
        return [_strip(v) for v in patch if not _is_directive(v)]
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [_strip(v) for v in patch if not _is_directive(v)]
    result = list(original)
    for item in patch:
        if not isinstance(item, dict):
            msg = f"unable to find api field in struct for the list {field}: element {item!r}"
            raise StrategicError(msg)
        if key not in item:
            msg = f"map: {item} does not contain declared merge key: {key}"
            raise StrategicError(msg)
        idx = next(
            (
                i
                for i, cur in enumerate(result)
                if isinstance(cur, dict) and cur.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                result.pop(idx)
            continue
        if idx is None:
            result.append(_strip(item))
        else:
            merged = _merge_map(result[idx], item)
            if merged is _DELETE:
                result.pop(idx)
            else:
                result[idx] = merged
    return result


def _is_directive(v: Any) -> bool:
    return isinstance(v, dict) and v.get("$patch") in ("replace", "delete") and len(v) == 1


def _strip(v: Any) -> Any:
    """A patch value without directive keys, as stored."""
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if not k.startswith("$") and x is not None}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def _reorder(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    key = MERGE_KEYS.get(field)

    def ident(v: Any) -> Any:
        if key is not None and isinstance(v, dict):
            return v.get(key)
        return v if not isinstance(v, (dict, list)) else None

    wanted = [ident(o) for o in order]
    pos = {w: i for i, w in enumerate(wanted) if w is not None}
    indexed = list(enumerate(items))
    indexed.sort(key=lambda p: (pos.get(ident(p[1]), len(pos)), p[0]))
    return [v for _, v in indexed]
