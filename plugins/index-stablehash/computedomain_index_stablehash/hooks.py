"""The pluggy hook implementation the ``computedomain`` entry point names.

``computedomain.policies.registry.load()`` registers :data:`plugin` and asks it for its index
policies; ``cd-imex-daemon`` then picks ``stable-hash`` by name (``INDEX_POLICY``).
"""

from __future__ import annotations

from collections.abc import Sequence

from computedomain.policies import IndexPolicy, hookimpl
from computedomain_index_stablehash.policy import StableHashIndex


class StableHashPlugin:
    """Provides the ``stable-hash`` index policy."""

    @hookimpl
    def computedomain_index_policies(self) -> Sequence[IndexPolicy]:
        return (StableHashIndex(),)


plugin = StableHashPlugin()
