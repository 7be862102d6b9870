"""computedomain plugin: the ``per-domain`` channel allocation strategy for ``cd-kubelet-plugin``.

Each ComputeDomain with a workload on a node gets its own IMEX channel there, so workloads of
different domains (tenants) on one node cannot import each other's memory (upstream #468).
The strategy is in :mod:`.strategy`; :mod:`.hooks` registers it through the ``computedomain``
entry-point group.
"""

from computedomain_channels_per_domain.strategy import NAME, PerDomainChannel

__all__ = ["NAME", "PerDomainChannel"]
