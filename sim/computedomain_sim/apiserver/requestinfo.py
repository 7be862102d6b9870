"""Request classification: URL path + method → :class:`RequestInfo` (what kube-apiserver's
RequestInfoFactory computes), the input of authorization and of handler dispatch.

Called once per request by :mod:`.pipeline`; pure.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@attrs.frozen
class RequestInfo:
    path: str
    verb: str  # get list watch create update patch delete deletecollection, or the HTTP verb
    is_resource: bool = False
    api_prefix: str = ""  # "api" or "apis"
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    # "/apis/{g}" style discovery paths (no resource) carry group/version but is_resource=False.


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def parse(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Classify a request; never raises (unknown shapes become non-resource requests)."""
    method = method.upper()
    parts = [p for p in path.split("/") if p]
    lower_verb = method.lower()
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(path, lower_verb)
    prefix = parts[0]
    rest = parts[1:]
    if prefix == "api":
        if not rest:
            return RequestInfo(path, lower_verb, api_prefix=prefix)
        group, version, rest = "", rest[0], rest[1:]
    else:
        if len(rest) < 2:
            return RequestInfo(path, lower_verb, api_prefix=prefix, group=rest[0] if rest else "")
        group, version, rest = rest[0], rest[1], rest[2:]
    if not rest:
        return RequestInfo(path, lower_verb, api_prefix=prefix, group=group, version=version)

    legacy_watch = False
    if rest[0] == "watch":
        legacy_watch = True
        rest = rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces":
        if len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        elif len(rest) == 2:
            # /namespaces/{name}: the namespace object itself
            namespace = rest[1]
            rest = ["namespaces", rest[1]]
    if not rest:
        return RequestInfo(path, lower_verb, api_prefix=prefix, group=group, version=version)
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if resource == "namespaces" and name:
        namespace = name  # the namespace object lives "in" itself for authorization
    if len(rest) > 3:
        subresource = "/".join(rest[2:])

    if legacy_watch:
        verb = "watch"
    elif method in {"GET", "HEAD"}:
        verb = "watch" if _truthy(query.get("watch")) else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _METHOD_VERBS.get(method, lower_verb)
    if resource == "namespaces" and not name:
        namespace = ""
    return RequestInfo(
        path,
        verb,
        is_resource=True,
        api_prefix=prefix,
        group=group,
        version=version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
    )
