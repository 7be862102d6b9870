"""The kubelet plugin with host-managed IMEX (docs/compatibility.md#host-managed-imex-daemons):
only channel-0 is published, daemon claims are refused for good, and a channel claim gets its
channel (never a label) once the host's nvidia-imex answers READY, with the wait published."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.kubeletplugin import hostchannels, sliceplan
from computedomain.kubeletplugin.hostchannels import HostChannels
from computedomain.kubeletplugin.hostimex import HostImexNotReady
from computedomain.kubeletplugin.ports import Waiting
from computedomain.proto import dra
from tests.unit.kubeletplugin import fixtures as fx


@attrs.define
class FakeHost:
    """The host daemon's answer, switchable; counts the questions."""

    problem: str | None = "host nvidia-imex daemon not ready: UNAVAILABLE"
    asked: int = 0

    async def check(self) -> None:
        self.asked += 1
        if self.problem is not None:
            raise HostImexNotReady(self.problem)


@attrs.define
class Problems:
    reports: list[tuple[str, str | None]] = attrs.field(factory=list)

    async def report(self, domain: Mapping[str, Any], problem: str | None) -> None:
        self.reports.append((domain["metadata"]["uid"], problem))


def _harness(
    tmp_path: Path, *, clique_id: str = fx.CLIQUE
) -> tuple[fx.Harness, FakeHost, Problems]:
    host, problems = FakeHost(), Problems()
    channels = HostChannels(
        node_name=fx.NODE, clique_id=clique_id, channel_major=234, daemon=host, problems=problems
    )
    return fx.harness(tmp_path, clique_id=clique_id, host=channels), host, problems


def _ref(claim: dict[str, Any]) -> dra.ClaimRef:
    meta = claim["metadata"]
    return dra.ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def test_only_channel_0_is_published() -> None:
    assert [d["name"] for d in sliceplan.devices(fx.CLIQUE, host_managed=True)] == ["channel-0"]
    assert [d["name"] for d in sliceplan.devices(fx.CLIQUE)] == ["channel-0", "daemon-0"]


async def test_a_daemon_claim_is_refused_permanently_and_nothing_is_recorded(
    tmp_path: Path,
) -> None:
    h, host, _ = _harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("daemon", cd["metadata"]["uid"])
    with pytest.raises(PermanentError) as info:
        await h.state.prepare(claim, requested_at=h.tick())
    assert str(info.value) == (
        "ComputeDomain daemon claims are not supported when imex.mode=hostManaged"
    )
    assert h.checkpoints.read().claims == {}
    assert host.asked == 0


async def test_channel_waits_for_the_host_daemon_then_gets_channel_0(tmp_path: Path) -> None:
    h, host, problems = _harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    uid = cd["metadata"]["uid"]
    claim = fx.claim("channel", uid, mode="All")
    with pytest.raises(Waiting) as info:
        await h.state.prepare(claim, requested_at=h.tick())
    assert str(info.value) == (
        "host nvidia-imex daemon readiness check failed: "
        "host nvidia-imex daemon not ready: UNAVAILABLE"
    )
    assert "Waiting for the host's nvidia-imex daemon on node n1" in info.value.reason
    assert "ComputeDomain team-a/job" in info.value.reason
    assert problems.reports == [(uid, "host nvidia-imex daemon not ready: UNAVAILABLE")]
    entry = h.checkpoints.read().claims[claim["metadata"]["uid"]]
    assert not entry.completed

    host.problem = None
    (device,) = await h.state.prepare(claim, requested_at=h.tick())
    assert device.device_name == "channel-0"
    spec = yaml.safe_load(h.cdi.claim_path(claim["metadata"]["uid"]).read_text())
    nodes = spec["devices"][0]["containerEdits"]["deviceNodes"]
    assert [n["path"] for n in nodes] == ["/dev/nvidia-caps-imex-channels/channel0"]
    assert problems.reports[-1] == (uid, None)
    assert h.labeler.calls == []  # no node label, ever

    await h.state.unprepare(_ref(claim))
    assert h.labeler.calls == []
    assert problems.reports[-1] == (uid, None)
    assert h.checkpoints.read().claims == {}


async def test_no_clique_completes_without_asking_the_host(tmp_path: Path) -> None:
    h, host, _ = _harness(tmp_path, clique_id="")
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("channel", cd["metadata"]["uid"])
    (device,) = await h.state.prepare(claim, requested_at=h.tick())
    assert device.device_name == "channel-0"
    assert host.asked == 0
    assert not h.cdi.claim_path(claim["metadata"]["uid"]).exists()


async def test_channel_0_is_one_claims_per_node_whatever_the_domain(tmp_path: Path) -> None:
    h, host, _ = _harness(tmp_path)
    host.problem = None
    first = fx.claim("channel", h.cluster.add(fx.domain("a"))["metadata"]["uid"])
    await h.state.prepare(first, requested_at=h.tick())
    second = fx.claim("channel", h.cluster.add(fx.domain("b"))["metadata"]["uid"])
    with pytest.raises(TemporaryError, match="already allocated"):
        await h.state.prepare(second, requested_at=h.tick())


def test_channels_is_exactly_the_allocated_one() -> None:
    from computedomain.kubeletplugin.checkpoint import Checkpoint, DeviceType, PreparedDevice

    device = PreparedDevice(
        device="channel-0", pool="n1", requests=("channel",), type=DeviceType.CHANNEL, domain_id="d"
    )
    assert hostchannels.channels(Checkpoint(), "u", device, 2048) == [0]
    with pytest.raises(PermanentError, match="is not an allocatable IMEX channel device"):
        hostchannels.channel_id("daemon-0")
