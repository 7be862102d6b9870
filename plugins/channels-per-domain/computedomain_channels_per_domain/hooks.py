"""The pluggy hook implementation the ``computedomain`` entry point names.

``computedomain.policies.registry.load()`` registers :data:`plugin` and asks it for its channel
strategies; ``cd-kubelet-plugin`` serves an allocation mode with ``per-domain`` when its
``CHANNEL_STRATEGY_MAP`` says so (e.g. ``Single=per-domain``).
"""

from __future__ import annotations

from collections.abc import Sequence

from computedomain.policies import ChannelStrategy, hookimpl
from computedomain_channels_per_domain.strategy import PerDomainChannel


class PerDomainPlugin:
    """Provides the ``per-domain`` channel allocation strategy."""

    @hookimpl
    def computedomain_channel_strategies(self) -> Sequence[ChannelStrategy]:
        return (PerDomainChannel(),)


plugin = PerDomainPlugin()
