"""Informer event handlers: every change becomes the UID of the domain it concerns, queued.

Handlers only enqueue keys, never snapshots (style rule 4; upstream queued object copies with
callbacks, which processed stale data and could not merge). A domain event queues its own UID;
a DaemonSet, template, daemon pod, clique or node event queues the UID its domain label names
(and the old one if the label changed). A template event also queues every domain whose
workload template has that namespace/name, so a name collision is re-evaluated when the
colliding object changes or goes. Updates that change nothing (resyncs) are dropped, except for
domains: their periodic resync is the safety net that re-plans every domain now and then.

Installed by :class:`~computedomain.controller.controller.Controller`.
"""

from __future__ import annotations

from typing import Any, Protocol

from computedomain.controller import objects
from computedomain.controller.caches import Caches
from computedomain.kube.informer import EnqueueHandler, FuncHandler, is_resync

Obj = dict[str, Any]


class Queue(Protocol):
    def add(self, key: str) -> None: ...


def install(caches: Caches, queue: Queue) -> None:
    """Register the handlers on every informer of ``caches``."""

    def domain(obj: Obj) -> None:
        uid = objects.uid(obj)
        if uid:
            queue.add(uid)

    caches.domains.add_handler(
        FuncHandler(add=domain, update=lambda old, new: domain(new), delete=domain)
    )
    by_label = EnqueueHandler(queue, key=objects.domain_uid)
    for informer in caches.labelled_informers:
        informer.add_handler(by_label)

    def template(obj: Obj) -> None:
        uid = objects.domain_uid(obj)
        if uid:
            queue.add(uid)
        for wanting in caches.domains_wanting_template(objects.namespace(obj), objects.name(obj)):
            queue.add(wanting)

    def template_update(old: Obj, new: Obj) -> None:
        if is_resync(old, new):
            return
        template(new)
        if objects.domain_uid(old) != objects.domain_uid(new):
            template(old)

    caches.templates.add_handler(FuncHandler(add=template, update=template_update, delete=template))
