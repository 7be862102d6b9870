"""Extension points: the pluggy hook specifications third-party packages implement.

A plugin distribution declares an entry point in the ``computedomain`` group whose object
implements one or more of these hooks (decorate with :data:`hookimpl`). Each hook returns
policy objects, each with a unique ``name``; components pick one by name from their
configuration (:mod:`computedomain.policies.registry`). The built-ins, which reproduce upstream
exactly, are always registered.

Three kinds of policy exist:

- **Index policy** (cd-imex-daemon): which index a daemon gets in its clique. The index picks
  the daemon's DNS name, so the uniqueness of ``(cliqueID, index)`` must hold for every policy;
  the property suites check each registered one.
- **DNS-name policy** (cd-imex-daemon): the host name an index maps to in ``nodes.cfg`` and the
  hosts file. Distinct indices must map to distinct names.
- **Channel allocation strategy** (cd-kubelet-plugin): which IMEX channel ids a prepared channel
  claim injects. A claim's ``allocationMode`` names the strategy (built-ins ``Single`` and
  ``All``); operators may map a mode to another registered strategy.

Policies must be pure: same inputs, same answer, no I/O (they run inside compare-and-swap retry
loops and property tests). A policy with settings of its own (read from the environment, say)
returns a :class:`Deferred` instead: the registry builds it, and so reads and checks those
settings, only when a component selects it by name, so a bad setting of one policy never stops
a component that uses another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar, runtime_checkable

import attrs
import pluggy

PROJECT = "computedomain"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

_P = TypeVar("_P")


@attrs.frozen
class Deferred(Generic[_P]):
    """A policy named ``name`` that ``build()`` makes when, and only when, it is selected.

    ``build`` reads and validates the policy's own settings and may raise
    :class:`~computedomain.api.errors.ConfigError` naming the setting; the registry calls it at
    most once per process and checks that the policy it returns carries ``name``.
    """

    name: str
    build: Callable[[], _P]


@attrs.frozen
class IndexRequest:
    """What an index policy knows when a daemon joins its clique."""

    node_name: str
    # index -> node name of every other entry already in the clique
    used: Mapping[int, str]
    # indices must lie in [0, limit): MAX_NODES_PER_IMEX_DOMAIN
    limit: int
    # the index this node held before, if the daemon remembers one (e.g. after a restart)
    previous: int | None = None


@runtime_checkable
class IndexPolicy(Protocol):
    @property
    def name(self) -> str: ...

    def allocate(self, request: IndexRequest) -> int | None:
        """An index in ``[0, limit)`` not in ``request.used``, or None when the space is full."""
        ...


@runtime_checkable
class DnsNamePolicy(Protocol):
    @property
    def name(self) -> str: ...

    def dns_name(self, index: int) -> str:
        """The host name of ``index``: a valid DNS name, distinct for distinct indices."""
        ...


@attrs.frozen
class ChannelRequest:
    """What a channel strategy knows when a workload channel claim is prepared on a node."""

    allocation_mode: str | None
    domain_id: str
    claim_uid: str
    # channel ids injected into other prepared channel claims on this node, by domain id
    in_use: Mapping[str, frozenset[int]]
    # channels the node has (/dev/nvidia-caps-imex-channels/channel0..N-1)
    channel_count: int


@runtime_checkable
class ChannelStrategy(Protocol):
    @property
    def name(self) -> str: ...

    def channels(self, request: ChannelRequest) -> Sequence[int]:
        """The channel ids to inject, each in ``[0, channel_count)``; empty means none free."""
        ...


# What each hook returns: policies, or policies built when selected.
IndexPolicies = Sequence[IndexPolicy | Deferred[IndexPolicy]]
DnsNamePolicies = Sequence[DnsNamePolicy | Deferred[DnsNamePolicy]]
ChannelStrategies = Sequence[ChannelStrategy | Deferred[ChannelStrategy]]


class HookSpecs:
    """Namespace of the hook specifications (registered with ``add_hookspecs``)."""

    @hookspec
    def computedomain_index_policies(self) -> IndexPolicies:  # type: ignore[empty-body]
        """Return the index policies this plugin provides."""

    @hookspec
    def computedomain_dns_name_policies(self) -> DnsNamePolicies:  # type: ignore[empty-body]
        """Return the DNS-name policies this plugin provides."""

    @hookspec
    def computedomain_channel_strategies(self) -> ChannelStrategies:  # type: ignore[empty-body]
        """Return the channel allocation strategies this plugin provides."""
