"""Channel claims with host-managed IMEX: channel 0, after the host's daemon answers READY.

The contract: docs/compatibility.md#host-managed-imex-daemons. :class:`~.state.DeviceState`
hands a channel device here instead of to the driver-managed path when ``IMEX_MODE`` is
``hostManaged``. What differs from driver-managed prepare:

- :func:`refuse_daemons`: a daemon device fails the claim permanently (nothing runs a daemon);
- :func:`channels`: exactly the allocated channel (``allocationMode: All`` is ignored), range
  checked, and no other completed claim on the node may hold it, whatever its domain;
- no node label and no wait for the domain's daemons; on a node without a clique the claim
  completes with no device node; otherwise :meth:`HostChannels.edits` asks the host daemon
  (:class:`~.ports.HostDaemon`) and, until it answers READY, raises :class:`~.ports.Waiting`
  (retried, a Warning event on the claim's pods) and publishes the problem on the domain
  (:class:`~.ports.HostProblems`), which the controller quotes in the Ready condition; once
  READY, the problem is cleared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from computedomain.api import names
from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.kubeletplugin import channelclaims
from computedomain.kubeletplugin.cdi import ContainerEdits
from computedomain.kubeletplugin.checkpoint import Checkpoint, DeviceType, PreparedDevice
from computedomain.kubeletplugin.claimplan import ClaimPlan
from computedomain.kubeletplugin.ports import HostDaemon, HostProblems, Waiting

DAEMON_CLAIMS_REFUSED: Final = (
    "ComputeDomain daemon claims are not supported when imex.mode=hostManaged"
)
CHECK_FAILED: Final = "host nvidia-imex daemon readiness check failed"


def refuse_daemons(plan: ClaimPlan) -> None:
    """Raise PermanentError when the claim holds a daemon device. Pure."""
    if plan.of_type(DeviceType.DAEMON):
        raise PermanentError(DAEMON_CLAIMS_REFUSED)


def channel_id(device: str) -> int:
    """The channel number of ``channel-<n>``. Pure; PermanentError for another name."""
    kind, _, number = device.rpartition("-")
    if kind != names.DEVICE_TYPE_CHANNEL or not number.isdigit():
        msg = f'applyComputeDomainChannelConfigHostManaged: "{device}" is not an allocatable IMEX '
        raise PermanentError(msg + "channel device")
    return int(number)


def channels(
    checkpoint: Checkpoint, uid: str, device: PreparedDevice, channel_count: int
) -> list[int]:
    """The one channel this claim gets. Pure; TemporaryError while another completed claim
    holds it (the kubelet unprepares an old claim soon), PermanentError when out of range."""
    channel = channel_id(device.device)
    if not 0 <= channel < channel_count:
        raise PermanentError(
            f"channel {channel} is outside the {channel_count} IMEX channel device nodes"
        )
    for other_uid, other in checkpoint.completed():
        if other_uid == uid:
            continue
        held = {c for d in other.devices if d.type is DeviceType.CHANNEL for c in d.channels}
        if channel in held:
            raise TemporaryError(
                f"allocation failed: channel {channel} already allocated by claim {other_uid} "
                "(according to checkpoint)"
            )
    return [channel]


def wait_reason(domain: Mapping[str, Any], node: str, why: str) -> str:
    """What a waiting claim tells its pods. Pure."""
    return (
        f"Waiting for the host's nvidia-imex daemon on node {node} "
        f"(ComputeDomain {channelclaims.domain_ref(domain)}, imex.mode=hostManaged): {why}"
    )


class HostChannels:
    """The host-managed channel step of one node (module doc)."""

    def __init__(
        self,
        *,
        node_name: str,
        clique_id: str,
        channel_major: int,
        daemon: HostDaemon,
        problems: HostProblems,
    ) -> None:
        self.node_name = node_name
        self.clique_id = clique_id
        self.channel_major = channel_major
        self.daemon = daemon
        self.problems = problems

    async def edits(self, domain: Mapping[str, Any], chosen: Sequence[int]) -> ContainerEdits:
        """The device node of ``chosen`` once the host daemon is READY; raises Waiting."""
        if not self.clique_id:
            return ContainerEdits()
        try:
            await self.daemon.check()
        except TemporaryError as exc:
            await self.problems.report(domain, str(exc))
            raise Waiting(
                f"{CHECK_FAILED}: {exc}",
                reason=wait_reason(domain, self.node_name, str(exc)),
            ) from exc
        await self.problems.report(domain, None)
        return channelclaims.edits(chosen, self.channel_major, clique_id=self.clique_id)

    async def released(self, domain: Mapping[str, Any] | None) -> None:
        """The node holds no claim of ``domain`` any more: clear its problem there."""
        if domain is not None:
            await self.problems.report(domain, None)
