"""Request accounting in the embedded API server: how many requests each client made, by verb,
and how many of them were answered 409 Conflict or 429 Too Many Requests.

:class:`RequestAccounting` is an ``EmbeddedApiServer(stages=[...])`` stage (see
:mod:`.pipeline`: it runs after classification, before authentication). Used by
``bench/e2e.py`` to report the API traffic of each component: every component authenticates with
its own ServiceAccount token, so the authenticated user names the component (the controller's,
the kubelet plugins' and the IMEX daemons' accounts; ``admin`` for the simulation itself and
the benchmark), and the ``User-Agent`` tells the clients of one account apart (``sim``,
``bench``). A watch is counted when it starts. Single event loop: no locking.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

from aiohttp import web

from . import security, status
from .pipeline import INFO, STATE, Handler
from .state import ApiState

__all__ = ["RequestAccounting"]

UNAUTHENTICATED = "(unauthenticated)"
# The answers worth counting apart: write conflicts and throttling.
COUNTED_STATUSES = (409, 429)


class RequestAccounting:
    """Counters by (user, verb), (user, agent) and (user, status) for the counted statuses."""

    def __init__(self) -> None:
        self._by_verb: Counter[tuple[str, str]] = Counter()
        self._by_status: Counter[tuple[str, int]] = Counter()
        self._by_agent: Counter[tuple[str, str]] = Counter()
        self._users: dict[str, str] = {}  # token -> user name, so a token is verified once

    def _user(self, state: ApiState, header: str) -> str:
        known = self._users.get(header)
        if known is not None:
            return known
        name = UNAUTHENTICATED
        with contextlib.suppress(status.ApiStatusError):
            user = security.authenticate(state, header)
            if user is not None:
                name = user.name
                self._users[header] = name
        return name

    async def __call__(self, request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
        user = self._user(request[STATE], request.headers.get("Authorization", ""))
        self._by_verb[(user, request[INFO].verb)] += 1
        agent = request.headers.get("User-Agent", "").split("/", 1)[0].strip()
        self._by_agent[(user, agent or "(none)")] += 1
        try:
            response = await handler(request)
        except status.ApiStatusError as exc:
            self._count_status(user, exc.code)
            raise
        self._count_status(user, response.status)
        return response

    def _count_status(self, user: str, code: int) -> None:
        if code in COUNTED_STATUSES:
            self._by_status[(user, code)] += 1

    def total(self) -> int:
        return sum(self._by_verb.values())

    def snapshot(self) -> dict[str, Any]:
        """JSON-ready, users sorted: ``{user: {"total": n, "verbs": {verb: n}, "agents":
        {agent: n}, "409": n, "429": n}}``. Pure."""
        out: dict[str, dict[str, Any]] = {}
        for (user, verb), count in sorted(self._by_verb.items()):
            entry = out.setdefault(user, {"total": 0, "verbs": {}, "agents": {}})
            entry["total"] += count
            entry["verbs"][verb] = count
        for (user, agent), count in sorted(self._by_agent.items()):
            out[user]["agents"][agent] = count
        for user, entry in out.items():
            for code in COUNTED_STATUSES:
                entry[str(code)] = self._by_status[(user, code)]
        return out

    def reset(self) -> None:
        self._by_verb.clear()
        self._by_status.clear()
        self._by_agent.clear()
