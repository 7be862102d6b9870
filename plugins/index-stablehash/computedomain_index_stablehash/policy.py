"""The ``stable-hash`` index policy: a node's home index is a hash of its name.

Called by the daemon's registration (through
:class:`~computedomain.policies.hookspecs.IndexPolicy`) when its entry is not yet in its clique.
The answer, in order of preference:

1. ``previous``, the index this daemon held before (e.g. across a container restart), when it
   is in range and free: keeping it avoids changing the IMEX node id of a running node;
2. otherwise the first free index in the node's probe order: its home index
   ``sha256(node name) mod limit``, then home+1, home+2, ... wrapping around (linear probing).

So a node that leaves and rejoins gets its home index back whenever that index is free, which
upstream's lowest-free rule only gives by accident. The hash is SHA-256 rather than
:func:`hash`, so every process (whatever ``PYTHONHASHSEED``) computes the same home.

Everything here is pure: the same request gives the same answer, and the order of
``request.used`` does not matter (policies run inside compare-and-swap retry loops).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Final

import attrs

from computedomain.policies import IndexRequest

NAME: Final = "stable-hash"


def home_index(node_name: str, limit: int) -> int:
    """The node's preferred index in ``[0, limit)``. Pure; raises ValueError if ``limit < 1``."""
    if limit < 1:
        msg = f"limit must be at least 1, not {limit}"
        raise ValueError(msg)
    digest = hashlib.sha256(node_name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % limit


def probe_order(node_name: str, limit: int) -> Iterator[int]:
    """Every index of ``[0, limit)`` once, starting at the node's home index. Pure."""
    if limit < 1:
        return
    home = home_index(node_name, limit)
    for step in range(limit):
        yield (home + step) % limit


@attrs.frozen
class StableHashIndex:
    """The policy object (see the module docstring); stateless, so one instance serves all."""

    name: str = NAME

    def allocate(self, request: IndexRequest) -> int | None:
        """A free index in ``[0, limit)``, or None when every one is used. Pure."""
        previous = request.previous
        if previous is not None and 0 <= previous < request.limit and previous not in request.used:
            return previous
        return next(
            (i for i in probe_order(request.node_name, request.limit) if i not in request.used),
            None,
        )
