"""Publishes the host problem that keeps ``nvidia-imex`` from running as an annotation on the
daemon's own pod, so the controller can name it in the ComputeDomain's ``Ready`` condition
(docs/operations.md#the-ready-condition; the Warning event of :mod:`computedomain.daemon.events`
says it too).

:mod:`computedomain.daemon.runner` creates one :class:`ProblemPublisher` with a callable giving
the current problem text (from the keeper's ``blocked_by``), pokes it when that changes, and
runs :meth:`ProblemPublisher.run` as a task. Only changes are written; a failed write is
retried after a pause. Calls :func:`computedomain.daemon.pod.annotate_problem`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from computedomain.daemon import pod
from computedomain.daemon.identity import Identity
from computedomain.kube.errors import ApiError
from computedomain.kube.rest import Api
from computedomain.runtime import logs

log = logs.get_logger(__name__)

RETRY_AFTER: Final = 2.0


class ProblemPublisher:
    """Keeps the pod's problem annotation equal to ``current()``. The startup patch
    (:func:`~computedomain.daemon.pod.label_with_clique`) clears it, so publishing starts from
    "none"."""

    def __init__(self, api: Api, identity: Identity, current: Callable[[], str | None]) -> None:
        self._api = api
        self._identity = identity
        self._current = current
        self._published: str | None = None
        self._changed = asyncio.Event()

    def poke(self) -> None:
        """The problem may have changed. Never blocks."""
        self._changed.set()

    async def run(self) -> None:
        """Write each change until cancelled. Never raises an ApiError."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            want = self._current()
            if want == self._published:
                continue
            try:
                await pod.annotate_problem(self._api, self._identity, want)
            except ApiError as exc:
                log.warning("publishing the host problem on the pod failed", error=str(exc))
                await asyncio.sleep(RETRY_AFTER)
                self._changed.set()
            else:
                self._published = want
