"""The request pipeline: small stages every request passes, in this order.

1. :func:`error_boundary` — turns :class:`.status.ApiStatusError` into a ``Status`` body and
   any unexpected exception into a logged 500 ``InternalError`` (the server never crashes on
   a request).
2. :func:`classify` — computes the :class:`.requestinfo.RequestInfo`.
3. *extra stages* — the seam for fault injection and similar cross-cutting behaviour: any
   ``aiohttp`` middleware passed as ``EmbeddedApiServer(stages=[...])`` runs here, after the
   request is classified (``request[INFO]``) and before authentication, so it can answer
   409/429 (with ``Retry-After``)/500/503 itself, delay the request, or wrap the response;
   a stage that needs the server's state (e.g. watch streams, to drop them or end them with
   an early 410: :meth:`.watch.WatchHub.close_all`) finds it as ``request[STATE]``.
4. :func:`authenticate` — bearer token → user, then its ``Impersonate-*`` headers
   (:mod:`.impersonation`) → the user the request runs as (``request[USER]``); 401 when
   required, 403 when an impersonation is not allowed.
5. :func:`authorize` — RBAC decision for the request attributes; 403 worded as
   kube-apiserver.
6. the handler (:mod:`.app`) — admission and validation (:mod:`.admission`), storage
   (:mod:`.store`), and, through the store's listeners, watch fan-out (:mod:`.watch`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from . import requestinfo, security, status, wire
from .authn import UserInfo
from .state import ApiState

log = logging.getLogger(__name__)

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
Stage = Callable[[web.BaseRequest, Handler], Awaitable[web.StreamResponse]]

STATE = web.RequestKey("state", ApiState)
INFO = web.RequestKey("info", requestinfo.RequestInfo)
# The authenticated user, or None when the server runs without authentication.
USER: web.RequestKey[UserInfo | None] = web.RequestKey("user")


@web.middleware
async def error_boundary(request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except status.ApiStatusError as exc:
        return wire.status_response(exc)
    except web.HTTPException as exc:
        if exc.status == 413:
            return wire.status_response(
                status.request_entity_too_large(request[STATE].config.max_body_bytes)
            )
        return wire.status_response(
            status.ApiStatusError(exc.status, exc.reason, exc.text or exc.reason)
        )
    except ConnectionError:
        raise
    except Exception as exc:
        log.exception("internal error serving %s %s", request.method, request.path_qs)
        return wire.status_response(status.internal_error(f"{type(exc).__name__}: {exc}"))


@web.middleware
async def classify(request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
    request[INFO] = requestinfo.parse(request.method, request.path, request.query)
    return await handler(request)


@web.middleware
async def authenticate(request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
    state = request[STATE]
    user = security.authenticate(state, request.headers.get("Authorization", ""))
    request[USER] = security.impersonate(state, user, request.headers)
    return await handler(request)


@web.middleware
async def authorize(request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
    state = request[STATE]
    security.authorize(state, request[USER], request[INFO])
    return await handler(request)


def stages(extra: list[Any]) -> list[Any]:
    """The stages of the pipeline, outermost first."""
    return [error_boundary, classify, *extra, authenticate, authorize]


def compose(state: ApiState, extra: list[Any], final: Handler) -> Handler:
    """One handler running every stage around ``final`` (aiohttp's middleware calling
    convention, without its router: the low-level server calls this per request)."""
    handler = final
    for stage in reversed(stages(extra)):
        handler = functools.partial(stage, handler=handler)

    async def entry(request: web.BaseRequest) -> web.StreamResponse:
        request[STATE] = state
        return await handler(request)

    return entry
