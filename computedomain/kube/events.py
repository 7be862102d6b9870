"""Kubernetes Events for what users must see (core/v1 Events, as client-go's recorder writes them).

Components call :meth:`EventRecorder.event` from anywhere in their code — it only queues and
never raises — and the program's supervisor runs :meth:`EventRecorder.run`, which writes the
queued events through :class:`~computedomain.kube.rest.Api`. Repeats are folded into the existing
Event and floods are dropped by :class:`~computedomain.kube.eventcorrelator.Correlator`.

Each Event carries ``involvedObject`` {apiVersion, kind, name, namespace, uid, resourceVersion},
``source`` {component, host}, ``firstTimestamp``/``lastTimestamp``/``count``,
``reportingComponent``/``reportingInstance``; it lives in the involved object's namespace
(``default`` for cluster-scoped objects) and is named ``<object name>.<hex nanoseconds>``.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from computedomain.kube import errors
from computedomain.kube.eventcorrelator import Bump, Correlator, Create, Drop, EventKey
from computedomain.kube.resources import EVENTS
from computedomain.kube.rest import Api, PatchType
from computedomain.runtime import logs
from computedomain.runtime.clock import REAL_CLOCK, Clock

_log = logs.get_logger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
MAX_MESSAGE = 1024
QUEUE_LIMIT = 1000


def timestamp(epoch_seconds: float) -> str:
    """A Kubernetes Time string (RFC 3339, seconds, UTC). Pure."""
    moment = datetime.datetime.fromtimestamp(epoch_seconds, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def involved_object(obj: dict[str, Any]) -> dict[str, str]:
    """The ObjectReference an Event points at. Pure; fields the object lacks are omitted."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: str(v) for k, v in ref.items() if v}


class EventRecorder:
    """Queue events now, write them later (de-duplicated and rate limited)."""

    def __init__(
        self,
        api: Api,
        *,
        component: str,
        host: str | None = None,
        clock: Clock | None = None,
        correlator: Correlator | None = None,
    ) -> None:
        self.api = api
        self.component = component
        self.host = host or ""
        self._clock = clock or REAL_CLOCK
        self.correlator = correlator or Correlator(clock=self._clock)
        self._queue: asyncio.Queue[tuple[EventKey, dict[str, str], float]] = asyncio.Queue(
            QUEUE_LIMIT
        )
        self.dropped = 0
        self._last_ns = 0

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        """Record that ``reason``/``message`` happened to ``obj``. Never blocks, never raises.

        ``type`` is ``Normal`` or ``Warning``; anything else is logged and dropped, as are events
        for objects without a name and events beyond the queue's capacity.
        """
        try:
            if type not in (NORMAL, WARNING):
                _log.error("dropping event with invalid type", type=type, reason=reason)
                return
            ref = involved_object(obj)
            if "name" not in ref or "kind" not in ref:
                _log.error("dropping event for an object without kind/name", reason=reason)
                return
            key = EventKey(
                involved=(
                    ref.get("apiVersion", ""),
                    ref["kind"],
                    ref.get("namespace", ""),
                    ref["name"],
                    ref.get("uid", ""),
                ),
                type=type,
                reason=reason,
                message=message[:MAX_MESSAGE],
                source=(self.component, self.host),
            )
            self._queue.put_nowait((key, ref, self._clock.time()))
        except asyncio.QueueFull:
            self.dropped += 1
            _log.warning("event queue full; dropping event", reason=reason)
        except Exception:
            self.dropped += 1
            _log.exception("could not record event", reason=reason)

    async def run(self) -> None:
        """Write queued events until cancelled; failures are logged, never raised."""
        while True:
            key, ref, when = await self._queue.get()
            try:
                await self._write(key, ref, when)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.warning(
                    "could not write event", reason=key.reason, object=ref.get("name"), error=exc
                )
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        """Wait until every event queued so far has been handled (needs :meth:`run` running)."""
        await self._queue.join()

    async def _write(self, key: EventKey, ref: dict[str, str], when: float) -> None:
        decision = self.correlator.decide(key)
        if isinstance(decision, Drop):
            self.dropped += 1
            _log.debug("event rate limited", reason=key.reason, object=ref.get("name"))
            return
        if isinstance(decision, Bump):
            patch = {
                "count": decision.count,
                "lastTimestamp": timestamp(when),
                "message": key.message,
            }
            try:
                written = await self.api.patch(
                    EVENTS,
                    decision.name,
                    patch,
                    namespace=decision.namespace,
                    patch_type=PatchType.MERGE,
                )
            except errors.NotFound:
                self.correlator.forget(key)  # expired on the server: start a new one
            else:
                self.correlator.written(key, written)
                return
        assert isinstance(decision, Create | Bump)
        written = await self.api.create(EVENTS, self._new_event(key, ref, when))
        self.correlator.written(key, written)

    def _new_event(self, key: EventKey, ref: dict[str, str], when: float) -> dict[str, Any]:
        stamp = timestamp(when)
        namespace = ref.get("namespace") or "default"
        self._last_ns = max(self._last_ns + 1, int(when * 1e9))  # unique names per recorder
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref['name']}.{self._last_ns:x}",
                "namespace": namespace,
            },
            "involvedObject": ref,
            "reason": key.reason,
            "message": key.message,
            "type": key.type,
            "source": {k: v for k, v in (("component", self.component), ("host", self.host)) if v},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
