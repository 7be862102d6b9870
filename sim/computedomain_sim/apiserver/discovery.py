"""Discovery documents: ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/{g}``,
``/apis/{g}/{v}`` in both the legacy form and the aggregated form (``apidiscovery.k8s.io/v2``)
that kubectl and client-go ask for first.

Built from the :class:`.registry.Registry` on every request (the registry changes when CRDs
come and go; building is cheap). Called by :mod:`.app`; pure.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import status, wire
from .registry import Registry, ResourceType

AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
VERSION = {
    "major": "1",
    "minor": "34",
    "gitVersion": "v1.34.0-computedomain",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.24.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

# subresource -> (group, version, kind or None for the parent's, verbs)
_SUBRESOURCES: dict[str, tuple[str | None, str | None, str | None, tuple[str, ...]]] = {
    "status": (None, None, None, ("get", "patch", "update")),
    "scale": ("autoscaling", "v1", "Scale", ("get", "patch", "update")),
    "binding": ("", "v1", "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
    "finalize": (None, None, None, ("update",)),
}


def wants_aggregated(request: web.BaseRequest) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=APIGroupDiscoveryList" in accept and "v=v2" in accept


def _gv(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}" if group else version, "version": version}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [_gv(name, v) for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def api_versions(host: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }


def group_list(registry: Registry) -> dict[str, Any]:
    groups = [_group(g, vs) for g, vs in registry.groups().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(registry: Registry, name: str) -> dict[str, Any]:
    versions = registry.groups().get(name)
    if not versions or not name:
        raise status.ApiStatusError(
            404, "NotFound", "the server could not find the requested resource"
        )
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource(rt: ResourceType) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    return out


def _sub(rt: ResourceType, sub: str) -> tuple[str, str, str, list[str]]:
    group, version, kind, verbs = _SUBRESOURCES.get(sub, (None, None, None, ("get",)))
    return (
        rt.group if group is None else group,
        rt.version if version is None else version,
        kind or rt.kind,
        list(verbs),
    )


def resource_list(registry: Registry, group_name: str, version: str) -> dict[str, Any]:
    types = registry.in_group_version(group_name, version)
    if not types:
        raise status.ApiStatusError(
            404, "NotFound", "the server could not find the requested resource"
        )
    resources = []
    for rt in sorted(types, key=lambda r: r.plural):
        resources.append(_resource(rt))
        for sub in rt.subresources:
            g, v, kind, verbs = _sub(rt, sub)
            entry: dict[str, Any] = {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": kind,
                "verbs": verbs,
            }
            if (g, v) != (rt.group, rt.version):
                entry["group"], entry["version"] = g, v
            resources.append(entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group_name}/{version}" if group_name else version,
        "resources": resources,
    }


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    subs = []
    for sub in rt.subresources:
        g, v, kind, verbs = _sub(rt, sub)
        subs.append(
            {
                "subresource": sub,
                "responseKind": {"group": g, "version": v, "kind": kind},
                "verbs": verbs,
            }
        )
    if subs:
        out["subresources"] = subs
    return out


def aggregated(registry: Registry, legacy: bool) -> dict[str, Any]:
    """The APIGroupDiscoveryList for ``/api`` (legacy=True) or ``/apis``."""
    items = []
    for name, versions in registry.groups().items():
        if (name == "") != legacy:
            continue
        vs = []
        for v in versions:
            types = sorted(registry.in_group_version(name, v), key=lambda r: r.plural)
            vs.append(
                {
                    "version": v,
                    "resources": [_aggregated_resource(rt) for rt in types],
                    "freshness": "Current",
                }
            )
        items.append({"metadata": {"name": name, "creationTimestamp": None}, "versions": vs})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def aggregated_response(registry: Registry, legacy: bool) -> web.Response:
    resp = wire.json_response(aggregated(registry, legacy))
    resp.headers["Content-Type"] = AGGREGATED_TYPE
    return resp
