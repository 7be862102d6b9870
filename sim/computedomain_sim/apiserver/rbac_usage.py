"""Which RBAC rule allowed each request: a recorder for proving least privilege (off unless
asked).

``EmbeddedApiServer(stages=[rbac_usage.stage(UsageLog(path))])`` (``sim up --rbac-usage PATH``)
puts a pipeline stage in front of authentication that wraps the server's
:class:`~.rbac.RBACAuthorizer` (once, on the first request) in :class:`RecordingAuthorizer`.
Every authorization decision for a non-admin user is then appended to ``path`` as one JSON line
(:class:`Use`): who asked for what, and which rule (``ClusterRole/<name>`` or
``Role/<ns>/<name>`` plus the rule's index) allowed it, or ``null`` when it was denied. Repeats of
an identical line are written once, so the file stays small. Requests of ``system:masters``
(the admin, the simulation's own controllers) never reach the rules and are not recorded.

:func:`read` parses the file back; the least-privilege test compares the rules used with the
rules in ``deployments/``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
from aiohttp import web

from . import pipeline
from .rbac import MASTERS, Decision, RBACAuthorizer, RequestAttributes


@attrs.frozen
class Use:
    """One authorization decision: ``rule`` is ``(role key, rule index)``, None when denied."""

    user: str
    verb: str
    group: str
    resource: str  # "pods", "pods/status", or the path of a non-resource request
    namespace: str
    rule: tuple[str, int] | None

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["rule"] = list(self.rule) if self.rule is not None else None
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Use:
        """Raises KeyError/TypeError/ValueError on a malformed line."""
        rule = data["rule"]
        return cls(
            user=str(data["user"]),
            verb=str(data["verb"]),
            group=str(data["group"]),
            resource=str(data["resource"]),
            namespace=str(data["namespace"]),
            rule=(str(rule[0]), int(rule[1])) if rule is not None else None,
        )


class UsageLog:
    """Appends each distinct :class:`Use` to a JSON-lines file (created with its directory).
    Thread-safe: the server may run in its own thread while a test reads the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: set[Use] = set()
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def record(self, use: Use) -> None:
        """Append ``use`` unless an identical one was recorded. Idempotent."""
        with self._lock:
            if use in self._seen:
                return
            self._seen.add(use)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(use.to_json(), sort_keys=True) + "\n")


def _use(attrs_: RequestAttributes, decision: Decision) -> Use:
    if attrs_.resource_request:
        resource = attrs_.resource
        if attrs_.subresource:
            resource = f"{resource}/{attrs_.subresource}"
    else:
        resource = attrs_.path
    return Use(
        user=attrs_.user.name,
        verb=attrs_.verb,
        group=attrs_.api_group,
        resource=resource,
        namespace=attrs_.namespace,
        rule=decision.rule if decision.allowed else None,
    )


class RecordingAuthorizer(RBACAuthorizer):
    """An :class:`RBACAuthorizer` that logs every decision for a non-admin user (the same
    policy, compiled by the wrapped instance)."""

    def __init__(self, inner: RBACAuthorizer, log: UsageLog) -> None:
        # Not calling super().__init__: every method below delegates to ``inner``.
        self._inner = inner
        self._log = log

    def invalidate(self) -> None:
        self._inner.invalidate()

    def authorize(self, attrs: RequestAttributes) -> Decision:
        decision = self._inner.authorize(attrs)
        if MASTERS not in attrs.user.groups:
            self._log.record(_use(attrs, decision))
        return decision

    def forbidden_message(self, attrs: RequestAttributes, reason: str | None = None) -> str:
        return self._inner.forbidden_message(attrs, reason)

    def used_rules(self) -> dict[tuple[str, int], int]:
        return self._inner.used_rules()

    def unused_rules(self) -> list[tuple[str, int]]:
        return self._inner.unused_rules()

    def reset_usage(self) -> None:
        self._inner.reset_usage()


def stage(log: UsageLog) -> pipeline.Stage:
    """The pipeline stage that makes the server's authorizer record into ``log``."""

    @web.middleware
    async def record_rbac_use(
        request: web.BaseRequest, handler: pipeline.Handler
    ) -> web.StreamResponse:
        state = request[pipeline.STATE]
        current = state.authorizer
        if current is not None and not isinstance(current, RecordingAuthorizer):
            state.authorizer = RecordingAuthorizer(current, log)
        return await handler(request)

    return record_rbac_use


def read(path: Path) -> Iterator[Use]:
    """The uses recorded in ``path`` (a line cut short by a concurrent write is skipped)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            yield Use.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError, IndexError):
            continue
