"""The ``per-domain`` channel strategy: one channel per ComputeDomain on a node.

Called by the kubelet plugin's prepare (through
:class:`~computedomain.policies.hookspecs.ChannelStrategy`) for a workload channel claim.
``request.in_use`` holds, by domain id, the channels injected into the other prepared channel
claims on this node. The answer is one channel:

1. the domain's own channel, when another of its claims on this node already holds one that
   no other domain holds (the lowest such, should there be several): pods of one domain on a
   node share their channel;
2. otherwise the lowest channel in ``[0, channel_count)`` that no other domain holds;
3. otherwise none (an empty answer): every channel belongs to another domain, and the plugin
   reports the claim as waiting.

IMEX channels are an access-control boundary (processes can share memory only through the same
channel), so distinct domains on one node never share one. Channels outside
``[0, channel_count)`` are never returned, whatever ``in_use`` contains. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from computedomain.policies.hookspecs import ChannelRequest

NAME: Final = "per-domain"


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
        return next(((c,) for c in usable if c not in taken), ())
