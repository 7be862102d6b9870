"""The ``per-domain`` channel strategy: one channel per ComputeDomain, the same on every node.

Called by the kubelet plugin's prepare (through
:class:`~computedomain.policies.hookspecs.ChannelStrategy`) for a workload channel claim.
``request.in_use`` holds, by domain id, the channels injected into the other prepared channel
claims on this node. The answer is one channel:

1. the domain's own channel, when another of its claims on this node already holds one that
   no other domain holds (the lowest such, should there be several): pods of one domain on a
   node share their channel;
2. otherwise the first channel no other domain holds in the domain's probe order: its *home*
   channel, derived from the domain id (:func:`home_channel`), then the channels after it,
   wrapping around within ``1 .. channel_count-1``, and channel 0 last;
3. otherwise none (an empty answer): every channel belongs to another domain, and the plugin
   reports the claim as waiting.

IMEX channels are an access-control boundary: processes share memory only when exporter and
importer hold the same channel, across nodes too. So distinct domains on one node never share
one, and a domain's home, computed alike on every node, gives its workloads the same channel
everywhere it is free. Channel 0 comes last because it is the channel everyone else uses (the
built-in ``Single`` strategy hands it to every claim, and the driver can create it for the host
at load time). Channels outside ``[0, channel_count)`` are never returned, whatever ``in_use``
contains. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Final

import attrs

from computedomain.policies import ChannelRequest

NAME: Final = "per-domain"


def home_channel(domain_id: str, channel_count: int) -> int:
    """The domain's preferred channel: in ``[1, channel_count)``, or 0 when that is the only
    channel (and when there is none). SHA-256 of the id, so every node and process agrees. Pure.
    """
    if channel_count <= 1:
        return 0
    digest = hashlib.sha256(domain_id.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % (channel_count - 1)


def probe_order(domain_id: str, channel_count: int) -> Iterator[int]:
    """Every channel of ``[0, channel_count)`` once: the home, the ones after it (wrapping
    within ``1 .. channel_count-1``), then 0. Pure."""
    if channel_count <= 0:
        return
    others = channel_count - 1
    if others:
        start = home_channel(domain_id, channel_count) - 1
        for step in range(others):
            yield 1 + (start + step) % others
    yield 0


def held_by_others(request: ChannelRequest) -> frozenset[int]:
    """Channels injected into claims of other domains on this node. Pure."""
    return frozenset().union(
        *(held for domain, held in request.in_use.items() if domain != request.domain_id)
    )


@attrs.frozen
class PerDomainChannel:
    """The strategy object (see the module docstring); stateless."""

    name: str = NAME

    def channels(self, request: ChannelRequest) -> Sequence[int]:
        """One channel for the claim's domain, or ``()`` when none is free. Pure."""
        taken = held_by_others(request)
        usable = range(request.channel_count)
        own = sorted(
            c for c in request.in_use.get(request.domain_id, ()) if c in usable and c not in taken
        )
        if own:
            return (own[0],)
        order = probe_order(request.domain_id, request.channel_count)
        return next(((c,) for c in order if c not in taken), ())
