"""JSON-dict REST access to any resource, built-in or custom, over the official asyncio client.

:class:`Api` is the one object every component uses to talk to the API server (built by
:func:`computedomain.kube.client.connect`, passed in, never global). It sends requests through
``kubernetes.aio``'s REST client (``kubernetes.aio.client.rest.RESTClientObject``: the aiohttp
session, TLS, proxy) with the credentials of its ``Configuration`` (``auth_settings()``, which
refreshes a rotated or expiring token), builds paths itself from
:class:`~computedomain.kube.resources.Resource` and speaks plain JSON dicts. The generated
``ApiClient`` sits between the two in the official client only to serialise and deserialise
the generated pydantic models, which we never use, so requests skip it.
:attr:`Api.api_client` still makes one on demand, for code that wants the generated APIs.

On top of the transport it adds what client-go has and the official client lacks:

- client-side rate limiting as client-go applies it to upstream's programs: a token bucket
  (``qps``/``burst``; ``qps <= 0`` is unlimited) per *client set*, where the ComputeDomain API
  group (``resource.nvidia.com``) has a client set of its own and every other group shares the
  core one, as upstream builds a core and a CRD clientset from the same settings (events, which
  upstream does not send, have one of their own); a watch
  takes no token, to start or while it streams (client-go's ``Request.Watch`` bypasses the
  limiter). See docs/rate-limits.md;
- bounded retries (``max_retries``, default 10) after the server's ``Retry-After`` on 429 and
  5xx: every verb retries a 429 (the server did not process it), only idempotent verbs (GET,
  PUT, DELETE) retry a 5xx, and no verb retries without a ``Retry-After``;
- every patch type sent with its own Content-Type (validated: a JSON patch must be a list);
- typed errors (:mod:`computedomain.kube.errors`) and per-request counters (:attr:`Api.stats`).
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import aiohttp
import attrs
from kubernetes.aio.client.api_client import ApiClient

from computedomain.kube import errors, wire
from computedomain.kube.ratelimit import TokenBucket
from computedomain.kube.resources import Resource
from computedomain.kube.stats import RequestStats
from computedomain.runtime import logs
from computedomain.runtime.clock import REAL_CLOCK, Clock

_log = logs.get_logger(__name__)

_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
_MAX_RETRY_WAIT = 60.0
_WATCH_SLACK = 30.0  # client-side margin past the server's own watch timeout

CORE_CLIENT_SET = "core"
# API groups that upstream's programs reach through a generated clientset of their own, with a
# QPS/burst budget of its own; every other group goes through the core clientset.
OWN_CLIENT_SETS = frozenset({"resource.nvidia.com"})
# Events (which upstream's programs do not send) have a budget of their own, so that a report
# never delays a write that a reconcile waits for.
EVENTS_CLIENT_SET = "events"


def client_set(path: str) -> str:
    """The client set whose budget a request to ``path`` spends: :data:`EVENTS_CLIENT_SET`
    for events, the API group when that group has a client set of its own, else
    :data:`CORE_CLIENT_SET`. Pure."""
    if wire.plural_of(path) == "events":
        return EVENTS_CLIENT_SET
    parts = path.split("/", 3)
    if len(parts) > 2 and parts[1] == "apis" and parts[2] in OWN_CLIENT_SETS:
        return parts[2]
    return CORE_CLIENT_SET


class PatchType(enum.StrEnum):
    """Patch formats and the Content-Type each is sent with."""

    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


@attrs.frozen
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK."""

    type: str
    object: dict[str, Any]


QueryItems = Sequence[tuple[str, str]]


class Api:
    """REST helpers for any resource; see the module docstring for limits and retries."""

    def __init__(
        self,
        transport: Any,
        configuration: Any,
        *,
        qps: float = 5.0,
        burst: int = 10,
        user_agent: str = "computedomain",
        timeout_seconds: float = 30.0,
        max_retries: int = 10,
        field_manager: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._transport = transport  # kubernetes.aio.client.rest.RESTClientObject
        self._configuration = configuration  # kubernetes.aio.client.Configuration
        self._api_client: Any = None
        self.user_agent = user_agent
        self._clock = clock or REAL_CLOCK
        self._buckets = {
            name: TokenBucket(qps, max(burst, 1), clock=self._clock)
            for name in (CORE_CLIENT_SET, EVENTS_CLIENT_SET, *sorted(OWN_CLIENT_SETS))
        }
        self._timeout = timeout_seconds
        self._max_retries = max_retries
        self.field_manager = field_manager
        self.stats = RequestStats()

    @property
    def api_client(self) -> Any:
        """A ``kubernetes.aio.client.ApiClient`` with this Api's configuration, for the
        generated APIs (made on first use, closed with the Api)."""
        if self._api_client is None:
            self._api_client = ApiClient(self._configuration)
            self._api_client.user_agent = self.user_agent
        return self._api_client

    @property
    def transport(self) -> Any:
        """The official REST client requests go through."""
        return self._transport

    @property
    def host(self) -> str:
        return str(self._configuration.host)

    # -- reads -------------------------------------------------------------------------------

    async def get(
        self, resource: Resource, name: str, namespace: str | None = None
    ) -> dict[str, Any]:
        """GET one object. Raises NotFound when absent."""
        return await self._call("get", resource.plural, "GET", resource.path(namespace, name))

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """One LIST request; returns the whole List object (items carry apiVersion/kind)."""
        query = wire.query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
            **{"continue": continue_token},
        )
        result = await self._call(
            "list", resource.plural, "GET", resource.path(namespace), query=query
        )
        return wire.with_type_meta(result, resource)

    async def list_all(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every matching object, following ``continue``; returns (items, list resourceVersion).

        If a continue token expires mid-way (410), falls back to one unpaginated list, as
        client-go's pager does.
        """
        items: builtins.list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                page = await self.list(
                    resource,
                    namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    limit=page_size if page_size > 0 else None,
                    continue_token=token,
                )
            except errors.Gone:
                if token is None:
                    raise
                _log.info("list continue token expired; listing in full", resource=resource.plural)
                page = await self.list(
                    resource,
                    namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                )
                items = []
                token = None
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                return items, str(meta.get("resourceVersion") or "")

    # -- writes ------------------------------------------------------------------------------

    async def create(
        self,
        resource: Resource,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """POST a new object; ``namespace`` defaults to ``body.metadata.namespace``.

        Not idempotent: raises AlreadyExists if the name is taken (callers decide if that is fine).
        """
        meta = body.get("metadata") or {}
        ns = namespace if namespace is not None else meta.get("namespace")
        if not resource.namespaced:
            ns = None
        elif not ns:
            msg = f"create {resource.kind}: no namespace given and body.metadata.namespace is empty"
            raise ValueError(msg)
        query = wire.query(fieldManager=field_manager or self.field_manager)
        return await self._call(
            "create", resource.plural, "POST", resource.path(ns), query=query, body=body
        )

    async def update(
        self,
        resource: Resource,
        body: dict[str, Any],
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """PUT ``body`` over the object its metadata names. A stale resourceVersion → Conflict."""
        meta = body.get("metadata") or {}
        name = meta.get("name")
        if not name:
            msg = f"update {resource.kind}: body.metadata.name is empty"
            raise ValueError(msg)
        ns = meta.get("namespace") if resource.namespaced else None
        path = resource.path(ns, name, subresource)
        query = wire.query(fieldManager=field_manager or self.field_manager)
        verb = "update" if subresource is None else f"update/{subresource}"
        return await self._call(verb, resource.plural, "PUT", path, query=query, body=body)

    async def update_status(self, resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        """PUT the status subresource (only ``status`` changes are kept by the server)."""
        return await self.update(resource, body, subresource="status")

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: dict[str, Any] | builtins.list[Any],
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> dict[str, Any]:
        """PATCH an object with the given patch type (sent as that exact Content-Type).

        A JSON patch must be a list of operations, the others a dict; server-side apply needs a
        field manager (argument or the Api's default) and accepts ``force``.
        """
        patch_type = PatchType(patch_type)
        if patch_type is PatchType.JSON and not isinstance(patch, list):
            msg = "a JSON patch must be a list of operations"
            raise TypeError(msg)
        if patch_type is not PatchType.JSON and not isinstance(patch, dict):
            msg = f"a {patch_type.name.lower()} patch must be a JSON object (dict)"
            raise TypeError(msg)
        manager = field_manager or self.field_manager
        if patch_type is PatchType.APPLY and not manager:
            msg = "server-side apply needs a field manager"
            raise ValueError(msg)
        path = resource.path(namespace if resource.namespaced else None, name, subresource)
        query = wire.query(fieldManager=manager, force=force)
        verb = "patch" if subresource is None else f"patch/{subresource}"
        return await self._call(
            verb, resource.plural, "PATCH", path, query=query, body=patch, content_type=patch_type
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """DELETE with optional preconditions (uid, resourceVersion) and propagation policy
        (``Foreground``, ``Background``, ``Orphan``).

        Returns the server's answer (the object when finalizers delay deletion, else a Status).
        Raises NotFound when absent and Conflict when a precondition fails.
        """
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {
            k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v is not None
        }
        if preconditions:
            options["preconditions"] = preconditions
        if propagation is not None:
            options["propagationPolicy"] = propagation
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        path = resource.path(namespace if resource.namespaced else None, name)
        return await self._call("delete", resource.plural, "DELETE", path, body=options)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, str] | QueryItems | None = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """Any request (TokenRequest, discovery, bindings); same limits, retries and errors."""
        items = list(query.items()) if isinstance(query, Mapping) else list(query or [])
        method = method.upper()
        return await self._call(
            method.lower(), wire.plural_of(path), method, path, query=items, body=body,
            content_type=content_type,
        )  # fmt: skip

    async def close(self) -> None:
        """Close the HTTP session(s). Idempotent."""
        await self._transport.close()
        if self._api_client is not None:
            await self._api_client.close()

    # -- watch -------------------------------------------------------------------------------

    async def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream changes after ``resource_version`` until the server ends the watch.

        Raises Gone when the version is too old (HTTP 410 or an in-stream ERROR with code 410),
        other ApiErrors for other failures. Closing the iterator closes the connection.
        """
        query = wire.query(
            watch=True,
            resourceVersion=resource_version,
            allowWatchBookmarks=allow_bookmarks or None,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            timeoutSeconds=timeout_seconds,
        )
        total = None if timeout_seconds is None else timeout_seconds + _WATCH_SLACK
        timeout = aiohttp.ClientTimeout(total=total, sock_connect=self._timeout)
        path = resource.path(namespace)
        response = await self._send(
            "GET", path, query, body=None, content_type="application/json", limits=timeout
        )
        self.stats.record("watch", resource.plural, response.status)
        try:
            if response.status >= 300:
                data = await self._read(response, f"WATCH {path}")
                raise errors.from_response(response.status, data, response.headers)
            with errors.translated(f"WATCH {path}"):
                async for line in wire.lines(response.response.content):
                    kind, obj = wire.decode_event(line, path)
                    yield WatchEvent(kind, obj)
        finally:
            response.response.close()

    # -- internals ---------------------------------------------------------------------------

    async def _call(
        self,
        verb: str,
        plural: str,
        method: str,
        path: str,
        *,
        query: QueryItems = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        what = f"{method} {path}"
        bucket = self._buckets[client_set(path)]
        attempt = 0
        while True:
            await bucket.acquire()
            try:
                response = await self._send(
                    method, path, query, body=body, content_type=content_type, limits=timeout
                )
                data = await self._read(response, what)
            except errors.ApiConnectionError:
                self.stats.record(verb, plural, 0)
                raise
            self.stats.record(verb, plural, response.status)
            if response.status < 300:
                return wire.decode_body(data, response.status, what)
            error = errors.from_response(response.status, data, response.headers)
            if attempt >= self._max_retries or not _retryable(error, method):
                raise error
            attempt += 1
            wait = min(error.retry_after or 0.0, _MAX_RETRY_WAIT)
            _log.info(
                "server asked to retry",
                request=what,
                status=error.status,
                wait=wait,
                attempt=attempt,
            )
            await self._clock.sleep(wait)

    async def _send(
        self,
        method: str,
        path: str,
        query: QueryItems,
        *,
        body: Any,
        content_type: str,
        limits: aiohttp.ClientTimeout,
    ) -> Any:
        resource_path = f"{path}?{urlencode(list(query))}" if query else path
        headers = {
            "Accept": "application/json",
            "Content-Type": str(content_type),
            "User-Agent": self.user_agent,
        }
        with errors.translated(f"{method} {path}"):
            # What ApiClient.update_params_for_auth does for the one scheme the official
            # Configuration defines (client certificates live in the transport's TLS context).
            bearer = (await self._configuration.auth_settings()).get("BearerToken")
            if bearer:
                headers[bearer["key"]] = bearer["value"]
            return await self._transport.request(
                method,
                self._configuration.host + resource_path,
                headers=headers,
                body=body,
                _request_timeout=limits,
            )

    @staticmethod
    async def _read(response: Any, what: str) -> bytes:
        with errors.translated(what):
            return bytes(await response.read())


def _retryable(error: errors.ApiError, method: str) -> bool:
    if error.retry_after is None:
        return False
    if isinstance(error, errors.TooManyRequests):
        return True
    return isinstance(error, errors.ApiServerError) and method in _IDEMPOTENT
