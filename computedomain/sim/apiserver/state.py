"""The server's shared state: one :class:`ApiState` per running server, passed to every stage
and handler (no globals), plus the pluggable hooks other modules fill in.

Built by :class:`.server.EmbeddedApiServer`; read by :mod:`.app`, :mod:`.rest`,
:mod:`.writes`, :mod:`.deletion`, :mod:`.gc`, :mod:`.crds`, :mod:`.discovery`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from .registry import Registry
from .status import FieldCause
from .store import Store
from .watch import WatchHub


class Schema(Protocol):
    """What the server needs from a compiled CRD structural schema (see ``schema.py``)."""

    def default(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def prune(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldCause]: ...


class PassThroughSchema:
    """The schema of a CRD version without one (or before schema support is wired): accepts
    everything unchanged."""

    def default(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    def prune(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldCause]:
        return []


SchemaCompiler = Callable[[dict[str, Any]], Schema]


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@attrs.define
class ServerConfig:
    """Tunables of one server; defaults are kube-apiserver's where it has one."""

    max_body_bytes: int = 3 * 1024 * 1024
    bookmark_interval: float = 10.0
    default_watch_timeout: float = 1800.0
    max_watch_pending: int = 20_000
    gc_interval: float = 0.05  # how often the garbage collector drains its queue
    rbac: bool = False
    require_auth: bool = False


@attrs.define
class ApiState:
    registry: Registry
    store: Store
    hub: WatchHub
    config: ServerConfig
    compile_schema: SchemaCompiler
    clock: Callable[[], dt.datetime] = utcnow
    stopping: asyncio.Event = attrs.field(factory=asyncio.Event)
    # (group, version, plural) -> compiled schema of a CRD-served version
    schemas: dict[tuple[str, str, str], Schema] = attrs.field(factory=dict)
    # Called with (storage key, object key) of every object the GC should look at.
    gc_notify: Callable[[tuple[str, str], str], None] = lambda skey, key: None
    # Objects whose "kubernetes" namespace finalizer the namespace controller must process.
    namespace_notify: Callable[[str], None] = lambda name: None
    # Authentication/authorization hooks (None: everything allowed, see pipeline.py).
    authenticator: Any = None
    authorizer: Any = None
