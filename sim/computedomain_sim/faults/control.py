"""``/debug/faults``: change the API server's faults at run time, over HTTP, admin only.

Served by the :class:`~computedomain_sim.faults.apiserver.ApiFaults` stage itself (so it exists
exactly when faults can be injected, and is never subject to them):

- ``GET``: the report (canonical spec with its seed, ``enabled``, counts by kind and target);
- ``PUT`` with a text body: a new spec (``computedomain_sim.faults.spec`` syntax; ``off``
  clears it) — or a JSON object ``{"spec": "...", "enabled": true|false, "resetCounts": true}``
  with any of the three; answers the new report, or 400 naming what is wrong with the spec;
- ``DELETE``: no faults (spec ``off``); counts are kept.

Only a token of the ``system:masters`` group (the server's admin token) may use it, with or
without RBAC: 401 without a valid token, 403 for any other user. :func:`put_faults` and
:func:`get_faults` are the client side, for the simulation and tools.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import aiohttp
from aiohttp import web

from computedomain_sim.apiserver import security, status, wire
from computedomain_sim.apiserver.state import ApiState
from computedomain_sim.faults import spec

if TYPE_CHECKING:
    from computedomain_sim.faults.apiserver import ApiFaults

PATH: Final = "/debug/faults"
MAX_BODY: Final = 64 * 1024


def _authorize(state: ApiState, request: web.BaseRequest) -> None:
    user = security.authenticate(state, request.headers.get("Authorization", ""))
    if user is None or security.MASTERS not in user.groups:
        name = user.name if user is not None else "unknown"
        raise status.forbidden(f'User "{name}" cannot change faults: {PATH} is for the admin token')


def _apply(faults: ApiFaults, body: bytes, content_type: str) -> None:
    text = body.decode("utf-8", errors="replace")
    if "json" not in content_type:
        faults.configure(text)
        faults.enabled = True
        return
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise status.bad_request(f"{PATH}: the body is not JSON: {exc}") from None
    if not isinstance(doc, dict) or set(doc) - {"spec", "enabled", "resetCounts"}:
        raise status.bad_request(
            f'{PATH}: expected an object with "spec", "enabled" and/or "resetCounts"'
        )
    if "spec" in doc:
        if not isinstance(doc["spec"], str):
            raise status.bad_request(f"{PATH}: spec must be a string")
        faults.configure(doc["spec"])
    if "enabled" in doc:
        if not isinstance(doc["enabled"], bool):
            raise status.bad_request(f"{PATH}: enabled must be true or false")
        faults.enabled = doc["enabled"]
    if doc.get("resetCounts") is True:
        faults.counts.reset()


async def handle(faults: ApiFaults, state: ApiState, request: web.BaseRequest) -> web.Response:
    """Serve one ``/debug/faults`` request; raises ApiStatusError (the pipeline words it)."""
    _authorize(state, request)
    if request.method == "GET":
        return wire.json_response(faults.report())
    if request.method == "PUT":
        body = await wire.read_body(request, MAX_BODY)
        try:
            _apply(faults, body, request.headers.get("Content-Type", ""))
        except spec.SpecError as exc:
            raise status.bad_request(f"{PATH}: {exc}") from None
        return wire.json_response(faults.report())
    if request.method == "DELETE":
        faults.configure(spec.FaultSpec(seed=faults.seed))
        return wire.json_response(faults.report())
    raise status.method_not_allowed(f"{PATH} allows GET, PUT and DELETE")


async def _call(  # noqa: PLR0917 - private, called positionally by the three below
    url: str, token: str, method: str, data: bytes | None, content_type: str, ssl: Any
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    async with (
        aiohttp.ClientSession(trust_env=False) as session,
        session.request(
            method, url.rstrip("/") + PATH, data=data, headers=headers, ssl=ssl
        ) as resp,
    ):
        body = await resp.json(content_type=None)
        if resp.status != 200:
            message = body.get("message", "") if isinstance(body, dict) else str(body)
            msg = f"{method} {PATH}: {resp.status}: {message}"
            raise RuntimeError(msg)
        result: dict[str, Any] = body
        return result


async def put_faults(url: str, token: str, fault_spec: str, *, ssl: Any = None) -> dict[str, Any]:
    """Set the faults of the server at ``url`` (admin ``token``; ``ssl`` as aiohttp takes it,
    e.g. an SSLContext trusting a ``--tls`` server's certificate); returns its report.
    Raises RuntimeError with the server's message (e.g. a bad spec)."""
    return await _call(url, token, "PUT", fault_spec.encode(), "text/plain", ssl)


async def set_enabled(url: str, token: str, enabled: bool, *, ssl: Any = None) -> dict[str, Any]:
    """Pause (False) or resume (True) the server's faults; returns its report."""
    data = json.dumps({"enabled": enabled}).encode()
    return await _call(url, token, "PUT", data, "application/json", ssl)


async def get_faults(url: str, token: str, *, ssl: Any = None) -> dict[str, Any]:
    """The server's fault report (spec, seed, enabled, counts)."""
    return await _call(url, token, "GET", None, "application/json", ssl)
