"""The built-in policies, reproducing upstream's; always registered.

- index ``lowest-free``: the lowest index not in use (gaps are filled), below the limit
  (docs/compatibility.md#index-allocation); one deliberate difference: a node that remembers the
  index it held (its daemon pod was replaced, see computedomain.daemon.indexmemory) gets it back
  while it is free.
- DNS names ``upstream``: ``compute-domain-daemon-%04d``.
- channels ``Single`` (channel 0) and ``All`` (every channel of the node).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from computedomain.api import names
from computedomain.policies.hookspecs import (
    ChannelRequest,
    ChannelStrategy,
    DnsNamePolicy,
    IndexPolicy,
    IndexRequest,
    hookimpl,
)

LOWEST_FREE: Final = names.DEFAULT_INDEX_POLICY
UPSTREAM_DNS: Final = names.DEFAULT_DNS_NAME_POLICY
SINGLE: Final = "Single"
ALL: Final = "All"


@attrs.frozen
class LowestFreeIndex:
    name: str = LOWEST_FREE

    def allocate(self, request: IndexRequest) -> int | None:
        # A node that held an index before (its daemon pod was replaced) gets it back while it
        # is free, so replacing every daemon of a domain at once cannot swap two nodes' ids.
        previous = request.previous
        if previous is not None and 0 <= previous < request.limit and previous not in request.used:
            return previous
        return next((i for i in range(request.limit) if i not in request.used), None)


@attrs.frozen
class UpstreamDnsNames:
    name: str = UPSTREAM_DNS

    def dns_name(self, index: int) -> str:
        return names.dns_name(index)


@attrs.frozen
class SingleChannel:
    name: str = SINGLE

    def channels(self, request: ChannelRequest) -> Sequence[int]:
        return (0,) if request.channel_count > 0 else ()


@attrs.frozen
class AllChannels:
    name: str = ALL

    def channels(self, request: ChannelRequest) -> Sequence[int]:
        return tuple(range(request.channel_count))


class BuiltinPolicies:
    """The pluggy plugin object that registers the built-ins."""

    @hookimpl
    def computedomain_index_policies(self) -> Sequence[IndexPolicy]:
        return (LowestFreeIndex(),)

    @hookimpl
    def computedomain_dns_name_policies(self) -> Sequence[DnsNamePolicy]:
        return (UpstreamDnsNames(),)

    @hookimpl
    def computedomain_channel_strategies(self) -> Sequence[ChannelStrategy]:
        return (SingleChannel(), AllChannels())
