"""computedomain plugin: the ``per-domain`` channel allocation strategy for ``cd-kubelet-plugin``.

Each ComputeDomain gets an IMEX channel of its own, derived from its id and so the same on
every node where it is free, so workloads of different domains (tenants) on one node cannot
import each other's memory (upstream #468) while a domain's workloads across nodes can.
The strategy is in :mod:`.strategy`; :mod:`.hooks` registers it through the ``computedomain``
entry-point group.
"""

from computedomain_channels_per_domain.strategy import (
    NAME,
    PerDomainChannel,
    home_channel,
    probe_order,
)

__all__ = ["NAME", "PerDomainChannel", "home_channel", "probe_order"]
