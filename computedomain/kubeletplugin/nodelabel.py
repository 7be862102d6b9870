"""The one-domain-per-node label ``resource.nvidia.com/computeDomain=<cd uid>`` (§4.4, §6.1).

A channel claim's prepare labels its Node with its domain's UID: the domain's daemon DaemonSet
selects nodes by this label, so this is what brings the IMEX daemon to the node. A node belongs
to one domain at a time: while another domain's UID is there, the prepare waits (and says so).
Unprepare removes the label only when it is still the claim's domain.

Every change is a compare-and-swap: read the Node (the informer's copy, or our own last write
when the informer has not caught up — :class:`~computedomain.kube.mutationcache.MutationCache`),
change a copy, PUT it with its resourceVersion; on a conflict re-read from the API and try again.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Final

from computedomain.api import names
from computedomain.api.errors import TemporaryError
from computedomain.kube import errors, resources
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kubeletplugin.ports import Waiting
from computedomain.kubeletplugin.wakeups import NODE_KEY

ATTEMPTS: Final = 5
LABEL: Final = names.COMPUTE_DOMAIN_LABEL

# domain UID -> "namespace/name", for messages (None when unknown)
DomainName = Callable[[str], str | None]


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


class NodeLabeler:
    """:class:`~computedomain.kubeletplugin.ports.NodeLabeler` over the API."""

    def __init__(
        self, api: Api, node_name: str, cache: MutationCache, domain_name: DomainName
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.cache = cache
        self.domain_name = domain_name

    async def _read(self, live: bool) -> dict[str, Any]:
        cached = None if live else self.cache.get(self.node_name)
        if cached is not None:
            return cached
        try:
            node = await self.api.get(resources.NODES, self.node_name)
        except errors.ApiError as exc:
            raise TemporaryError(f"reading Node {self.node_name}: {exc}") from exc
        self.cache.mutation(node)
        return node

    async def _change(self, domain_uid: str, *, add: bool) -> None:
        live = False
        for _ in range(ATTEMPTS):
            node = await self._read(live)
            current = _labels(node).get(LABEL)
            if add and current == domain_uid:
                return
            if add and current:
                other = self.domain_name(current)
                owner = f"{other} ({current})" if other else f"{current} (no longer exists)"
                raise Waiting(
                    "label already exists for a different ComputeDomain",
                    reason=(
                        f"Node {self.node_name} belongs to ComputeDomain {owner}; "
                        "waiting for it to be released"
                    ),
                    wake_on=(NODE_KEY,),
                )
            if not add and current != domain_uid:
                return
            body = copy.deepcopy(node)
            labels = body.setdefault("metadata", {}).setdefault("labels", {})
            if add:
                labels[LABEL] = domain_uid
            else:
                labels.pop(LABEL, None)
            try:
                self.cache.mutation(await self.api.update(resources.NODES, body))
                return
            except errors.Conflict:
                live = True
            except errors.ApiError as exc:
                raise TemporaryError(f"updating Node {self.node_name}: {exc}") from exc
        raise TemporaryError(f"updating Node {self.node_name}: conflicts on every attempt")

    async def ensure(self, domain_uid: str) -> None:
        await self._change(domain_uid, add=True)

    async def release(self, domain_uid: str) -> None:
        await self._change(domain_uid, add=False)
