"""Generated object names, as Kubernetes' controllers and API server make them.

Called by the DaemonSet, Deployment and ResourceClaim controllers of the simulation. The random
suffix uses the API server's alphabet (no vowels, no look-alike digits) and length (5), so names
look like the real ones (``computedomain-kubelet-plugin-x7kq2``).
"""

from __future__ import annotations

import secrets

__all__ = ["MAX_GENERATED_BASE", "random_suffix", "with_suffix"]

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH = 5
# A generated name is at most 63 characters: a base of 58 plus the 5-character suffix.
MAX_GENERATED_BASE = 58


def random_suffix() -> str:
    """Five random characters from the API server's generateName alphabet. Not pure."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(_SUFFIX_LENGTH))


def with_suffix(base: str, suffix: str | None = None) -> str:
    """``base`` truncated to :data:`MAX_GENERATED_BASE` characters plus a random suffix (or the
    given one, for tests). Not pure unless ``suffix`` is given."""
    return base[:MAX_GENERATED_BASE] + (suffix if suffix is not None else random_suffix())
