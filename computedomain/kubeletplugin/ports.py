"""What the prepare state machine needs from the cluster, as small interfaces.

:mod:`computedomain.kubeletplugin.state` decides; these objects answer its questions from the
informer caches (:mod:`computedomain.kubeletplugin.cluster`) and change the Node label
(:mod:`computedomain.kubeletplugin.nodelabel`). Tests of the state machine can hand in plain
objects, integration tests the real ones against the embedded API server.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol

from computedomain.api.errors import TemporaryError


class Waiting(TemporaryError):
    """A normal wait the user should hear about: ``reason`` is posted on the claim's pods."""

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        wake_on: tuple[str, ...] = (),
        delay: float | None = None,
    ) -> None:
        super().__init__(message, delay=delay)
        self.reason = reason
        self.wake_on = wake_on  # wake-up keys (see wakeups.py) that may end the wait


class ClusterView(Protocol):
    """Cached reads of the objects prepare depends on (no API round trip)."""

    def domain(self, uid: str) -> Mapping[str, Any] | None:
        """The ComputeDomain with this UID, in any namespace."""
        ...

    def clique(self, name: str) -> Mapping[str, Any] | None:
        """The ComputeDomainClique of this name in the driver namespace."""
        ...

    def daemon_pod(self, domain_uid: str) -> Mapping[str, Any] | None:
        """This node's daemon pod of the domain, if one exists."""
        ...


class NodeLabeler(Protocol):
    """The one-domain-per-node label on this node, changed by compare-and-swap."""

    async def ensure(self, domain_uid: str) -> None:
        """Set the label to ``domain_uid``; raises Waiting while another domain holds it."""
        ...

    async def release(self, domain_uid: str) -> None:
        """Remove the label if, and only if, it is ``domain_uid``. Idempotent."""
        ...

    async def release_unheld(self, held: Collection[str]) -> None:
        """Remove the label if its domain is not in ``held`` (the domains this node's claims
        still hold). Idempotent."""
        ...


class HostDaemon(Protocol):
    """The host's ``nvidia-imex`` (host-managed IMEX only)."""

    async def check(self) -> None:
        """Return when the daemon answers READY; raise TemporaryError saying why not."""
        ...


class HostProblems(Protocol):
    """Where this node says, on a domain, that its host daemon keeps a claim waiting."""

    async def report(self, domain: Mapping[str, Any], problem: str | None) -> None:
        """Publish ``problem`` for this node on ``domain`` (None: clear it). Never raises."""
        ...
