"""The one-domain-per-node label ``resource.nvidia.com/computeDomain=<cd uid>``.

The contract: docs/compatibility.md#channel-claims.

A channel claim's prepare labels its Node with its domain's UID: the domain's daemon DaemonSet
selects nodes by this label, so this is what brings the IMEX daemon to the node. A node belongs
to one domain at a time: while another domain's UID is there, the prepare waits (and says so).
Unprepare removes the label only when it is still the claim's domain (or, for a claim the
checkpoint no longer knows, when no claim of the checkpoint holds the labelled domain).

Every change is a compare-and-swap: read the Node, change a copy, PUT it with its
resourceVersion; on a conflict re-read from the API and try again. Both directions start from
the informer's copy (or our own last write when the informer has not caught up —
:class:`~computedomain.kube.mutationcache.MutationCache`): a write from a stale copy is caught by
the CAS. Only a decision to write nothing can rest on a stale copy unnoticed, so a removal that
finds nothing to remove in the cached copy reads the Node from the API (as upstream reads it
before every removal) and decides again: a copy that misses a label write which landed although
its answer was lost (a 504, a cut connection) must not leave the node bound to the domain. The
usual removal, right after our own label write, thus costs one request instead of two.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
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

    async def _change(self, wanted: Callable[[str | None], str | None], *, live_noop: bool) -> None:
        """Compare-and-swap the label to ``wanted(current)`` (None: no label); no write when
        it is already that, judged on a copy from the API when ``live_noop`` (else on the
        cached copy). Raises Waiting (from ``wanted``) or TemporaryError."""
        live = False
        for _ in range(ATTEMPTS):
            node = await self._read(live)
            current = _labels(node).get(LABEL)
            target = wanted(current)
            if target == current:
                if live or not live_noop:
                    return
                live = True  # nothing to do per the cache: confirm against the API
                continue
            # A new body sharing every part it does not change (the cached copy stays intact).
            meta = dict(node.get("metadata") or {})
            labels = dict(meta.get("labels") or {})
            if target is None:
                labels.pop(LABEL, None)
            else:
                labels[LABEL] = target
            meta["labels"] = labels
            body = {**node, "metadata": meta}
            try:
                self.cache.mutation(await self.api.update(resources.NODES, body))
                return
            except errors.Conflict:
                live = True
            except errors.ApiError as exc:
                raise TemporaryError(f"updating Node {self.node_name}: {exc}") from exc
        raise TemporaryError(f"updating Node {self.node_name}: conflicts on every attempt")

    async def ensure(self, domain_uid: str) -> None:
        def wanted(current: str | None) -> str:
            if current and current != domain_uid:
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
            return domain_uid

        await self._change(wanted, live_noop=False)

    async def release(self, domain_uid: str) -> None:
        await self._change(lambda c: None if c == domain_uid else c, live_noop=True)

    async def release_unheld(self, held: Collection[str]) -> None:
        await self._change(lambda c: None if c is not None and c not in held else c, live_noop=True)
