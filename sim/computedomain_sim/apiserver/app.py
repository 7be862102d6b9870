"""The HTTP server: pipeline stages (:mod:`.pipeline`) around one dispatcher, served by
aiohttp's low-level server (no router or application: every request takes the same path).

Non-resource paths (``/version``, health, discovery, OpenAPI) are answered here; resource
paths go to :mod:`.rest`. Built by :class:`.server.EmbeddedApiServer`.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import discovery, openapi, rest, status, wire
from .pipeline import INFO, STATE, compose
from .requestinfo import RequestInfo
from .state import ApiState

_HEALTH = ("/healthz", "/livez", "/readyz")


async def dispatch(request: web.BaseRequest) -> web.StreamResponse:
    state = request[STATE]
    info: RequestInfo = request[INFO]
    if info.is_resource:
        return await rest.handle(request, state, info)
    if request.method not in ("GET", "HEAD"):
        raise status.method_not_allowed(
            "the server does not allow this method on the requested resource"
        )
    path = request.path.rstrip("/") or "/"
    if path == "/version":
        return wire.json_response(discovery.VERSION)
    if path in _HEALTH or path.startswith(tuple(p + "/" for p in _HEALTH)):
        return web.Response(text="ok", content_type="text/plain")
    if path.startswith("/openapi/"):
        return openapi.respond(request, state)
    if info.api_prefix == "api" and not info.version:
        if discovery.wants_aggregated(request):
            return discovery.aggregated_response(state.registry, legacy=True)
        return wire.json_response(discovery.api_versions(request.host))
    if info.api_prefix == "apis" and not info.group:
        if discovery.wants_aggregated(request):
            return discovery.aggregated_response(state.registry, legacy=False)
        return wire.json_response(discovery.group_list(state.registry))
    if info.api_prefix == "apis" and not info.version:
        return wire.json_response(discovery.group(state.registry, info.group))
    if info.api_prefix and info.version:
        return wire.json_response(discovery.resource_list(state.registry, info.group, info.version))
    if path == "/":
        paths = sorted(
            {"/api", "/apis", "/version", "/healthz", "/livez", "/readyz", "/openapi/v2"}
        )
        return wire.json_response({"paths": paths})
    raise status.ApiStatusError(404, "NotFound", "the server could not find the requested resource")


def build(state: ApiState, extra_stages: list[Any]) -> web.Server:
    """The low-level aiohttp server for ``state``; ``extra_stages`` run after
    classification (see :mod:`.pipeline`)."""
    handler = compose(state, extra_stages, dispatch)
    # handler_cancellation: a watch whose client went away ends at once (its task is
    # cancelled), instead of lingering until its timeout. Writes are synchronous between their
    # awaits (reading the body), so a cancelled write never leaves half a change.
    return web.Server(handler, max_field_size=64 * 1024, access_log=None, handler_cancellation=True)
