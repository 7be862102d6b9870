"""computedomain plugin: the ``stable-hash`` index policy for ``cd-imex-daemon``.

A daemon's index (and so its DNS name and its IMEX node id) is derived from its node name, so a
node that leaves a clique and comes back gets the same index whenever that index is free,
instead of the lowest free one. The policy is in :mod:`.policy`; :mod:`.hooks` registers it
through the ``computedomain`` entry-point group.
"""

from computedomain_index_stablehash.policy import NAME, StableHashIndex, home_index, probe_order

__all__ = ["NAME", "StableHashIndex", "home_index", "probe_order"]
