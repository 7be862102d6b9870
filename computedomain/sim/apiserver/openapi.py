"""OpenAPI endpoints (``/openapi/v2``, ``/openapi/v3``).

Called by :mod:`.app`. The server publishes no OpenAPI documents yet; it answers 404 as a
server without them does, which kubectl handles by falling back to its built-in knowledge.
"""

from __future__ import annotations

from aiohttp import web

from . import status
from .state import ApiState


def respond(request: web.Request, state: ApiState) -> web.StreamResponse:
    raise status.ApiStatusError(404, "NotFound", "the server could not find the requested resource")
