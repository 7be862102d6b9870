"""One informer per watch for every component of a process: client-go's shared informer factory.

kube-controller-manager runs all its controllers over one SharedInformerFactory: a resource that
five controllers look at is listed and watched once, each event is decoded and stored once, and
every controller's handlers see it. The simulation's control plane (scheduler, DaemonSet,
Deployment and ResourceClaim controllers, pod garbage collection) shares its informers the same
way through :class:`InformerFactory`, in the embedded cluster and in the hollow one; with an
informer per controller, every pod event would be decoded once per controller.

Rules:

- informers are shared by (resource, namespace, label selector, field selector); what one user
  asks for is what every user of that informer gets;
- indexers requested by several users are merged; one index name must mean one function
  (a different function under a taken name is a ValueError, found at wiring time);
- :meth:`InformerFactory.running` runs the informers a component needs (those not running yet)
  and waits for their first list; when the last component using an informer leaves, it stops;
- handlers stay registered for the informer's life: a component that stops while others go on
  keeps receiving events, which its queue then ignores (a shut-down queue drops additions).

Used by :mod:`computedomain_sim.controllers` and :mod:`computedomain_sim.scheduler` (each takes a
factory, or makes a private one), wired by :mod:`computedomain_sim.cluster.cluster` and
:mod:`computedomain_sim.hollow.cluster`. Calls :class:`~computedomain.kube.informer.Informer`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence

from computedomain.kube.informer import Informer
from computedomain.kube.resources import Resource
from computedomain.kube.rest import Api
from computedomain.kube.store import IndexFunc

__all__ = ["InformerFactory"]

_Key = tuple[Resource, str | None, str | None, str | None]


class InformerFactory:
    """Shared informers over one client (module docstring)."""

    def __init__(self, api: Api, *, prefix: str = "shared") -> None:
        self.api = api
        self.prefix = prefix
        self._informers: dict[_Key, Informer] = {}
        self._tasks: dict[_Key, asyncio.Task[None]] = {}
        self._users: Counter[_Key] = Counter()

    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> Informer:
        """The informer for this watch, made on first request; ``indexers`` are added to it.
        Raises ValueError when an index name is taken by another function."""
        key = (resource, namespace, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            name = "-".join(part for part in (self.prefix, resource.plural, namespace) if part) + (
                "" if label_selector is None and field_selector is None else "-selected"
            )
            informer = self._informers[key] = Informer(
                self.api,
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                name=name,
            )
        new: dict[str, IndexFunc] = {}
        for index, func in (indexers or {}).items():
            taken = informer.store.indexer(index)
            if taken is None:
                new[index] = func
            elif taken is not func:
                msg = (
                    f"informer {informer.name}: index {index!r} is already registered with "
                    f"another function ({taken!r}, asked for {func!r})"
                )
                raise ValueError(msg)
        if new:
            informer.store.add_indexers(new)
        return informer

    def running_informers(self) -> list[Informer]:
        """The informers running now, in the order they were started."""
        return [self._informers[key] for key in self._tasks]

    def _key(self, informer: Informer) -> _Key:
        for key, mine in self._informers.items():
            if mine is informer:
                return key
        msg = f"informer {informer.name} was not made by this factory"
        raise ValueError(msg)

    @contextlib.asynccontextmanager
    async def running(self, informers: Sequence[Informer]) -> AsyncIterator[None]:
        """Run ``informers`` (starting those not running yet), wait for their first list, and
        yield; on the way out stop those that no other user still runs."""
        keys = [self._key(informer) for informer in informers]
        try:
            for key, informer in zip(keys, informers, strict=True):
                self._users[key] += 1
                if key not in self._tasks:
                    self._tasks[key] = asyncio.create_task(
                        informer.run(), name=f"informer-{informer.name}"
                    )
            for informer in informers:
                await informer.wait_for_sync()
            yield
        finally:
            stopping = []
            for key in keys:
                self._users[key] -= 1
                if self._users[key] <= 0:
                    del self._users[key]
                    task = self._tasks.pop(key, None)
                    if task is not None:
                        task.cancel()
                        stopping.append(task)
            await asyncio.gather(*stopping, return_exceptions=True)
