"""The event reasons and markers the doctor recognises, and who emits them.

Our components say why something waits through Warning events (docs/operations.md#events); the
doctor
reads them back. Names that a component module on ``main`` defines are imported from it, so a
rename there cannot silently blind the doctor.

- cd-kubelet-plugin, on workload pods: ``ComputeDomainNotReady`` (waiting for the local
  daemon, or for another domain's label to leave the node), ``PrepareRetrying`` (anything else
  retried) — :mod:`computedomain.kubeletplugin.waitevents`;
- cd-imex-daemon, on its own pod: ``IMEXSessionHeldByHost`` (``NV_ERR_IN_USE``: a host
  ``nvidia-imex.service`` holds the IMEX session), ``IMEXNoMatchingInterface``,
  ``IMEXIndexSpaceFull``, ``IndexPolicyViolation``, ``DaemonReplaced``, ``InvalidMembership``;
- cd-controller: the ``Ready`` condition's reasons ``WorkloadTemplateConflict`` and
  ``InvalidSpec`` (the spec cannot be served), and ``ReconcileFailed`` Warning events on the
  ComputeDomain — :mod:`computedomain.controller.readiness` and ``controller.py``;
- the kubelet: ``Unhealthy`` (a failed probe; the message carries what ``check`` printed),
  ``FailedPrepareDynamicResources``; the scheduler: ``FailedScheduling``.
"""

from __future__ import annotations

from typing import Final

from computedomain.controller import readiness
from computedomain.kubeletplugin import waitevents

# cd-kubelet-plugin
WAITING: Final = waitevents.REASON_WAITING
RETRYING: Final = waitevents.REASON_RETRYING

# cd-controller
SPEC_PROBLEMS: Final = (readiness.REASON_CONFLICT, readiness.REASON_INVALID)
RECONCILE_FAILED: Final = "ReconcileFailed"

# cd-imex-daemon (computedomain/daemon/hostconflict.py and events.py)
HOST_SESSION_IN_USE: Final = "IMEXSessionHeldByHost"
NV_ERR_IN_USE: Final = "NV_ERR_IN_USE"
NO_INTERFACE: Final = "IMEXNoMatchingInterface"
INDEX_SPACE_FULL: Final = "IMEXIndexSpaceFull"
DAEMON_PROBLEMS: Final = ("IndexPolicyViolation", "DaemonReplaced", "InvalidMembership")

# Kubernetes
UNHEALTHY: Final = "Unhealthy"
FAILED_SCHEDULING: Final = "FailedScheduling"
FAILED_PREPARE: Final = "FailedPrepareDynamicResources"
