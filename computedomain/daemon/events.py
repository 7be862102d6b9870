"""Warning events on the daemon pod, for what the user must act on.

The reasons are listed in docs/operations.md#events.

Wired by :mod:`computedomain.daemon.runner` into the keeper (host conflicts), the registration
loop (a full index space, a broken index policy, a replaced pod) and the IMEX sync (a
membership list it refuses). Writes through the kube layer's
:class:`~computedomain.kube.events.EventRecorder`, which never blocks and folds repeats.
"""

from __future__ import annotations

from computedomain.api.errors import ComputeDomainError
from computedomain.daemon import hostconflict, membership, pod
from computedomain.daemon.identity import Identity
from computedomain.kube.events import WARNING, EventRecorder

COMPONENT = "compute-domain-daemon"

_REASONS: dict[type[Exception], str] = {
    membership.IndexSpaceFull: "IMEXIndexSpaceFull",
    membership.PolicyViolation: "IndexPolicyViolation",
    membership.Superseded: "DaemonReplaced",
}


class PodEvents:
    """Turns the daemon's findings into Warning events on its own pod."""

    def __init__(
        self, recorder: EventRecorder, identity: Identity, context: hostconflict.Context
    ) -> None:
        self._recorder = recorder
        self._ref = pod.reference(identity)
        self._context = context

    def host_conflict(self, finding: hostconflict.Finding) -> None:
        message = hostconflict.message(finding, self._context)
        self._recorder.event(self._ref, WARNING, str(finding.reason), message)

    def registration_problem(self, error: ComputeDomainError) -> None:
        """Report the registration errors a user can act on; others are only logged."""
        reason = next((r for cls, r in _REASONS.items() if isinstance(error, cls)), None)
        if reason is not None:
            self._recorder.event(self._ref, WARNING, reason, str(error))

    def refused(self, error: ComputeDomainError) -> None:
        self._recorder.event(self._ref, WARNING, "InvalidMembership", str(error))
