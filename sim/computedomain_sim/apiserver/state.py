"""The server's shared state: one :class:`ApiState` per running server, passed to every stage
and handler (no globals), plus the pluggable hooks other modules fill in.

Built by :class:`.server.EmbeddedApiServer`; read by :mod:`.app`, :mod:`.rest`,
:mod:`.writes`, :mod:`.deletion`, :mod:`.gc`, :mod:`.crds`, :mod:`.discovery`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from .authn import Authenticator
from .rbac import RBACAuthorizer
from .registry import Registry
from .status import FieldCause
from .store import Store
from .watch import WatchHub


class Schema(Protocol):
    """What the server needs from a compiled CRD structural schema (see ``schema.py``)."""

    def default(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def prune(self, obj: dict[str, Any], *, unknown: list[str] | None = None) -> dict[str, Any]: ...

    def validate(
        self, obj: dict[str, Any], old: dict[str, Any] | None, *, subresource: str = ""
    ) -> list[FieldCause]: ...


class PassThroughSchema:
    """The schema of a CRD version without one (or before schema support is wired): accepts
    everything unchanged."""

    def default(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    def prune(self, obj: dict[str, Any], *, unknown: list[str] | None = None) -> dict[str, Any]:
        return obj

    def validate(
        self, obj: dict[str, Any], old: dict[str, Any] | None, *, subresource: str = ""
    ) -> list[FieldCause]:
        return []


SchemaCompiler = Callable[..., Schema]  # (openAPIV3Schema, *, path=...) -> Schema


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
    # How long a list waits for a resourceVersion newer than the store's before a 504.
    future_rv_wait: float = 3.0
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
    # CRD versions whose schema changed while objects were stored: defaulted on every read,
    # as kube-apiserver defaults stored objects when it decodes them.
    default_on_read: set[tuple[str, str, str]] = attrs.field(factory=set)
    # Objects whose "kubernetes" namespace finalizer the namespace controller must process.
    namespace_notify: Callable[[str], None] = lambda name: None
    # True only inside one synchronous dry-run write (see rest.dry_run and writes.commit).
    dry_run: bool = False
    # Authentication/authorization (None: open server, see security.py).
    authenticator: Authenticator | None = None
    authorizer: RBACAuthorizer | None = None
    # pods/log: (pod, container) -> its log files, oldest first (see podlogs.py); None: 404.
    pod_logs: Callable[[Any, str], Sequence[Path]] | None = None
