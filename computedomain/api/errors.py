"""The domain's error classes: what went wrong, and whether trying again can help.

::

    ComputeDomainError
    ├── PermanentError      bad input: report it at once (event, condition, claim error);
    │   │                   never retry
    │   └── ConfigError     an invalid setting or opaque config (also a ValueError);
    │                       names the field
    └── TemporaryError      a state that should pass (waiting for a peer, a conflict): retry
                            after ``delay`` seconds, or with the queue's backoff when None

Work queues, the kubelet plugin's retry loop and the daemon's registration loop all branch on
these two classes only. API transport errors live in :mod:`computedomain.kube.errors` and are
translated into one of these by the component that knows what they mean.
"""

from __future__ import annotations


class ComputeDomainError(Exception):
    """Base class of every error the project raises on purpose."""


class PermanentError(ComputeDomainError):
    """Retrying cannot help: the input is wrong and must be fixed by someone."""


class ConfigError(PermanentError, ValueError):
    """An invalid configuration value; ``field`` names it (``domainID``, ``--pod-name``, ...)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}" if field else reason)


class TemporaryError(ComputeDomainError):
    """The operation may succeed later; ``delay`` is a hint in seconds (None: use backoff)."""

    def __init__(self, message: str, *, delay: float | None = None) -> None:
        self.delay = delay
        super().__init__(message)
