"""The prepare/unprepare state machine, one attempt at a time, on in-memory ports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest
import yaml

from computedomain.api.errors import ConfigError, PermanentError, TemporaryError
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin.ports import Waiting
from computedomain.kubeletplugin.state import ABORTED_TTL
from computedomain.policies.hookspecs import ChannelRequest, hookimpl
from computedomain.proto import dra
from tests.unit.kubeletplugin import fixtures as fx


def load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=yaml.CSafeLoader)  # type: ignore[no-any-return]


def ref(claim: dict) -> dra.ClaimRef:
    meta = claim["metadata"]
    return dra.ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def entry(h: fx.Harness, claim: dict) -> cp.ClaimEntry | None:
    return h.checkpoints.read().claims.get(claim["metadata"]["uid"])


async def test_daemon_claim(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("daemon", cd["metadata"]["uid"])
    uid = claim["metadata"]["uid"]
    (device,) = await h.state.prepare(claim, requested_at=h.tick())
    assert (device.device_name, device.pool_name, device.request_names) == (
        "daemon-0",
        "n1",
        ("daemon",),
    )
    assert device.cdi_device_ids == (
        "k8s.compute-domain.nvidia.com/device=all",
        f"k8s.compute-domain.nvidia.com/claim={uid}-daemon-0",
    )
    spec = load(h.cdi.claim_path(uid))
    env = spec["devices"][0]["containerEdits"]["env"]
    assert env[1:] == [
        f"COMPUTE_DOMAIN_UUID={cd['metadata']['uid']}",
        "COMPUTE_DOMAIN_NAME=job",
        "COMPUTE_DOMAIN_NAMESPACE=team-a",
    ]
    domain_dir = h.state.facts.domains_root / cd["metadata"]["uid"]
    assert (domain_dir / "imexd.cfg.tmpl").is_file()
    stored = entry(h, claim)
    assert stored is not None
    assert stored.completed
    assert h.labeler.calls == []  # daemon claims never touch the label


async def test_completed_claim_is_returned_without_side_effects(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("daemon", cd["metadata"]["uid"])
    first = await h.state.prepare(claim, requested_at=h.tick())
    h.cdi.remove_claim(claim["metadata"]["uid"])
    h.cluster.domains.clear()  # even a vanished domain does not matter now
    assert await h.state.prepare(claim, requested_at=h.tick()) == first
    assert h.cdi.claim_uids() == set()


async def test_channel_claim_waits_then_completes(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    cd_uid = cd["metadata"]["uid"]
    claim = fx.claim("channel", cd_uid)
    with pytest.raises(Waiting) as wait:
        await h.state.prepare(claim, requested_at=h.tick())
    assert wait.value.reason == (
        f"Waiting for the IMEX daemon of ComputeDomain team-a/job on node n1 "
        f"(clique {fx.CLIQUE}): no daemon pod on this node yet"
    )
    assert wait.value.wake_on == (f"domain/{cd_uid}", f"domain/{cd_uid}/node/n1")
    assert h.labeler.value == cd_uid
    stored = entry(h, claim)
    assert stored is not None
    assert stored.state is cp.ClaimState.PREPARE_STARTED
    h.cluster.cliques[f"{cd_uid}.{fx.CLIQUE}"] = {
        "daemons": [{"nodeName": "n1", "status": "Ready"}]
    }
    (device,) = await h.state.prepare(claim, requested_at=h.tick())
    uid = claim["metadata"]["uid"]
    assert device.cdi_device_ids == (f"k8s.compute-domain.nvidia.com/claim={uid}-channel-0",)
    nodes = load(h.cdi.claim_path(uid))["devices"][0]["containerEdits"]
    assert nodes["deviceNodes"][0]["path"] == "/dev/nvidia-caps-imex-channels/channel0"
    stored = entry(h, claim)
    assert stored is not None
    assert stored.devices[0].channels == (0,)


async def test_retries_while_waiting_do_not_rewrite_the_checkpoint(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("channel", cd["metadata"]["uid"])
    path = h.checkpoints.path
    with pytest.raises(Waiting):
        await h.state.prepare(claim, requested_at=h.tick())
    inode = path.stat().st_ino
    with pytest.raises(Waiting):
        await h.state.prepare(claim, requested_at=h.tick())
    assert path.stat().st_ino == inode  # not replaced


async def test_no_clique_channel_has_no_cdi(tmp_path: Path) -> None:
    h = fx.harness(tmp_path, clique_id="")
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    claim = fx.claim("channel", cd["metadata"]["uid"])
    (device,) = await h.state.prepare(claim, requested_at=h.tick())
    assert device.cdi_device_ids == ()
    assert h.cdi.claim_uids() == set()


async def test_all_mode_injects_every_channel(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    claim = fx.claim("channel", cd["metadata"]["uid"], mode="All")
    await h.state.prepare(claim, requested_at=h.tick())
    spec = load(h.cdi.claim_path(claim["metadata"]["uid"]))
    assert len(spec["devices"][0]["containerEdits"]["deviceNodes"]) == 2048


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda c: None, "domainID: the ResourceClaim's namespace (team-b)"),
        (
            lambda c: c["status"]["allocation"]["devices"]["config"][0]["opaque"][
                "parameters"
            ].update(extra=1),
            "opaque.parameters.extra: unknown field",
        ),
    ],
)
async def test_permanent_errors_write_nothing(tmp_path: Path, mutate, field: str) -> None:  # type: ignore[no-untyped-def]
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("channel", cd["metadata"]["uid"], namespace="team-b")
    mutate(claim)
    before = h.checkpoints.path.read_bytes()
    with pytest.raises(PermanentError) as err:
        await h.state.prepare(claim, requested_at=h.tick())
    assert field in str(err.value)
    assert "status.allocation.devices.config[0]" in str(err.value)
    assert h.checkpoints.path.read_bytes() == before
    assert h.labeler.calls == []
    assert h.cdi.claim_uids() == set()


async def test_unknown_domain_is_permanent_for_channels_temporary_for_daemons(
    tmp_path: Path,
) -> None:
    h = fx.harness(tmp_path)
    with pytest.raises(ConfigError, match="ComputeDomain nope not found"):
        await h.state.prepare(fx.claim("channel", "nope"), requested_at=h.tick())
    with pytest.raises(TemporaryError, match="compute domain not found: nope"):
        await h.state.prepare(fx.claim("daemon", "nope"), requested_at=h.tick())


async def test_overlap_guard(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    first = fx.claim("channel", cd["metadata"]["uid"], name="old")
    await h.state.prepare(first, requested_at=h.tick())
    second = fx.claim("channel", cd["metadata"]["uid"])
    with pytest.raises(TemporaryError, match="channel-0 is already allocated to different claim"):
        await h.state.prepare(second, requested_at=h.tick())
    await h.state.unprepare(ref(first))
    await h.state.prepare(second, requested_at=h.tick())


async def test_unprepare(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    claim = fx.claim("channel", cd["metadata"]["uid"])
    await h.state.prepare(claim, requested_at=h.tick())
    await h.state.unprepare(ref(claim))
    assert h.labeler.value is None
    assert h.cdi.claim_uids() == set()
    checkpoint = h.checkpoints.read()
    assert checkpoint.claims == {}  # completed, no prepare in flight: dropped, not aborted
    inode = h.checkpoints.path.stat().st_ino
    await h.state.unprepare(ref(claim))  # idempotent, no write
    assert h.checkpoints.path.stat().st_ino == inode


STALE = (
    r"stale prepare for claim [^/]+/[^:]+:[0-9a-f-]+: claim prepare was already aborted "
    r"\(the claim was unprepared while this request was waiting\)"
)


async def test_unprepare_with_a_prepare_in_flight_marks_the_claim_aborted(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    claim = fx.claim("channel", cd["metadata"]["uid"])
    requested = h.tick()
    await h.state.prepare(claim, requested_at=requested)
    aborted_at = h.tick()
    await h.state.unprepare(ref(claim), prepare_in_flight=True)
    meta = claim["metadata"]
    assert entry(h, claim) == cp.ClaimEntry(
        cp.ClaimState.PREPARE_ABORTED, meta["namespace"], meta["name"], aborted_at
    )
    assert h.cdi.claim_uids() == set()
    assert h.labeler.value is None
    with pytest.raises(PermanentError, match=STALE):
        await h.state.prepare(claim, requested_at=requested)
    assert entry(h, claim) == cp.ClaimEntry(  # a refused prepare leaves the entry as it is
        cp.ClaimState.PREPARE_ABORTED, meta["namespace"], meta["name"], aborted_at
    )


async def test_an_unprepare_with_a_newer_request_in_flight_stamps_the_abort_again(
    tmp_path: Path,
) -> None:
    # An aborted claim, then a new request (not yet attempted) and another unprepare: the new
    # request began after the first mark, so only a fresh mark keeps it from resurrecting.
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    claim = fx.claim("channel", cd["metadata"]["uid"])
    h.tick()
    await h.state.unprepare(ref(claim), prepare_in_flight=True)
    newer = h.tick()
    h.tick()
    await h.state.unprepare(ref(claim), prepare_in_flight=True)
    with pytest.raises(PermanentError, match=STALE):
        await h.state.prepare(claim, requested_at=newer)
    inode = h.checkpoints.path.stat().st_ino
    await h.state.unprepare(ref(claim))  # aborted, nothing in flight: left as it is
    assert h.checkpoints.path.stat().st_ino == inode


async def test_stale_prepare_after_unprepare_is_refused(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("channel", cd["metadata"]["uid"])
    requested = h.tick()
    with pytest.raises(Waiting):
        await h.state.prepare(claim, requested_at=requested)
    h.tick()
    await h.state.unprepare(ref(claim))  # a started claim: marked aborted
    marked = entry(h, claim)
    assert marked is not None
    assert marked.aborted
    fx.set_ready(cd)
    with pytest.raises(PermanentError, match=STALE):
        await h.state.prepare(claim, requested_at=requested)
    assert h.labeler.value is None
    # A new request (the claim reused by a new pod) prepares it again.
    await h.state.prepare(claim, requested_at=h.tick())
    assert h.labeler.value == cd["metadata"]["uid"]
    again = entry(h, claim)
    assert again is not None
    assert again.completed


async def test_unprepare_before_first_attempt_also_blocks_it(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    claim = fx.claim("channel", cd["metadata"]["uid"])
    requested = h.tick()
    h.tick()
    await h.state.unprepare(ref(claim), prepare_in_flight=True)
    with pytest.raises(PermanentError, match=STALE):
        await h.state.prepare(claim, requested_at=requested)


async def test_aborted_entries_expire_after_upstreams_ttl(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("daemon", cd["metadata"]["uid"])
    await h.state.unprepare(ref(claim), prepare_in_flight=True)
    assert entry(h, claim) is not None
    h.tick(89)
    assert await h.state.expire_aborted() == 0
    assert entry(h, claim) is not None
    h.tick(1)
    assert await h.state.expire_aborted() == 1
    assert entry(h, claim) is None


async def test_any_write_drops_expired_aborted_entries(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("daemon", cd["metadata"]["uid"])
    await h.state.unprepare(ref(claim), prepare_in_flight=True)
    h.tick(ABORTED_TTL)
    other = fx.claim("daemon", cd["metadata"]["uid"])
    await h.state.prepare(other, requested_at=h.tick())
    assert entry(h, claim) is None
    assert entry(h, other) is not None


async def test_label_held_by_other_domain_waits(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    h.labeler.value = "other-uid"
    with pytest.raises(Waiting, match="label already exists"):
        await h.state.prepare(fx.claim("channel", cd["metadata"]["uid"]), requested_at=h.tick())


@attrs.frozen
class PerDomain:
    name: str = "per-domain"

    def channels(self, request: ChannelRequest) -> Sequence[int]:
        used = set().union(*request.in_use.values()) if request.in_use else set()
        return (next(i for i in range(1, request.channel_count) if i not in used),)


class PerDomainPlugin:
    @hookimpl
    def computedomain_channel_strategies(self) -> Sequence[object]:
        return (PerDomain(),)


async def test_strategy_map_serves_a_mode_with_another_strategy(tmp_path: Path) -> None:
    h = fx.harness(
        tmp_path, strategy_map={"Single": "per-domain"}, extra_plugins=(PerDomainPlugin(),)
    )
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    claim = fx.claim("channel", cd["metadata"]["uid"])
    await h.state.prepare(claim, requested_at=h.tick())
    stored = entry(h, claim)
    assert stored is not None
    assert stored.devices[0].channels == (1,)
    spec = load(h.cdi.claim_path(claim["metadata"]["uid"]))
    assert spec["devices"][0]["containerEdits"]["deviceNodes"][0]["minor"] == 1


def test_unknown_strategy_is_a_startup_error(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"Single=nope: unknown channel allocation strategy 'nope' \(valid: All, Single\)",
    ):
        fx.harness(tmp_path, strategy_map={"Single": "nope"})
    with pytest.raises(ConfigError, match="unknown allocation mode 'Many'"):
        fx.harness(tmp_path, strategy_map={"Many": "All"})


def _admin(claim: dict) -> dict:
    claim["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    return claim


async def test_a_channel_is_shared_within_a_domain_never_across(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    mine, theirs = fx.domain("mine"), fx.domain("theirs")
    for cd in (mine, theirs):
        fx.set_ready(cd)
        h.cluster.add(cd)
    await h.state.prepare(fx.claim("channel", mine["metadata"]["uid"]), requested_at=h.tick())
    # Admin access shares the device; the channel decides.
    same = _admin(fx.claim("channel", mine["metadata"]["uid"]))
    await h.state.prepare(same, requested_at=h.tick())
    other = _admin(fx.claim("channel", theirs["metadata"]["uid"]))
    with pytest.raises(TemporaryError, match=r"channel 0 already allocated by claim .*checkpoint"):
        await h.state.prepare(other, requested_at=h.tick())
    assert h.labeler.value == mine["metadata"]["uid"]


async def prepared_channel(h: fx.Harness) -> tuple[dict, str]:
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    claim = fx.claim("channel", cd["metadata"]["uid"])
    await h.state.prepare(claim, requested_at=h.tick())
    return claim, cd["metadata"]["uid"]


async def test_an_unprepare_whose_checkpoint_write_fails_leaves_the_claim_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk at the checkpoint write: the claim stays prepared with its CDI spec and its
    label, so a prepare of it again returns devices that are all there."""
    h = fx.harness(tmp_path)
    claim, cd_uid = await prepared_channel(h)
    uid = claim["metadata"]["uid"]

    def full(_: cp.Checkpoint) -> None:
        raise OSError(27, "File too large")

    monkeypatch.setattr(h.checkpoints, "write", full)
    with pytest.raises(OSError, match="File too large"):
        await h.state.unprepare(ref(claim))
    monkeypatch.undo()
    assert h.cdi.claim_uids() == {uid}
    assert h.labeler.value == cd_uid
    stored = entry(h, claim)
    assert stored is not None
    assert stored.completed


async def test_an_unprepare_cut_short_after_the_checkpoint_is_finished_by_the_retry(
    tmp_path: Path,
) -> None:
    """The entry is gone but the spec and label stay (a crash right after the checkpoint
    write): the retry, which finds no entry, deletes the spec and releases the label."""
    h = fx.harness(tmp_path)
    claim, _ = await prepared_channel(h)
    uid = claim["metadata"]["uid"]
    h.checkpoints.write(h.checkpoints.read().without_claim(uid))
    await h.state.unprepare(ref(claim))
    assert h.cdi.claim_uids() == set()
    assert h.labeler.value is None
    assert ("release_unheld", "") in h.labeler.calls


async def test_after_a_reboot_an_unprepare_releases_the_label_no_claim_holds(
    tmp_path: Path,
) -> None:
    """A reboot resets the checkpoint but not the Node: the label is released once a claim
    is unprepared and no claim of the checkpoint holds the domain any more; a held one stays."""
    h = fx.harness(tmp_path)
    claim, cd_uid = await prepared_channel(h)
    other = fx.claim("channel", cd_uid)
    h.checkpoints.write(cp.Checkpoint(boot_id="new"))  # the reset of a new boot
    # Another claim of the domain prepared in the new boot holds the label: it stays.
    await h.state.prepare(other, requested_at=h.tick())
    await h.state.unprepare(ref(claim))
    assert h.labeler.value == cd_uid
    await h.state.unprepare(ref(other))
    assert h.labeler.value is None
    h.labeler.value = cd_uid  # as the reboot left it
    await h.state.unprepare(ref(claim))
    assert h.labeler.value is None


@attrs.frozen
class Written:
    """One checkpoint write, with what was on disk and on the Node when it happened."""

    state: cp.ClaimState | None
    spec_on_disk: bool
    label: str | None


def record_writes(h: fx.Harness, claim: dict, monkeypatch: pytest.MonkeyPatch) -> list[Written]:
    uid = claim["metadata"]["uid"]
    writes: list[Written] = []
    original = h.checkpoints.write

    def write(checkpoint: cp.Checkpoint) -> None:
        held = checkpoint.claims.get(uid)
        spec = h.cdi.claim_path(uid).exists()
        writes.append(Written(held.state if held else None, spec, h.labeler.value))
        original(checkpoint)

    monkeypatch.setattr(h.checkpoints, "write", write)
    return writes


async def test_a_prepare_records_started_before_its_effects_and_completed_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two checkpoint writes per new claim, no more: PrepareStarted while neither the label
    nor the CDI spec exists, PrepareCompleted once both do; an unprepare writes once, while
    both are still there, and removes both after."""
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    cd_uid = h.cluster.add(cd)["metadata"]["uid"]
    claim = fx.claim("channel", cd_uid)
    writes = record_writes(h, claim, monkeypatch)
    await h.state.prepare(claim, requested_at=h.tick())
    assert writes == [
        Written(cp.ClaimState.PREPARE_STARTED, spec_on_disk=False, label=None),
        Written(cp.ClaimState.PREPARE_COMPLETED, spec_on_disk=True, label=cd_uid),
    ]
    await h.state.prepare(claim, requested_at=h.tick())  # completed: no write at all
    assert len(writes) == 2
    await h.state.unprepare(ref(claim))
    assert writes[2:] == [Written(None, spec_on_disk=True, label=cd_uid)]
    assert h.cdi.claim_uids() == set()
    assert h.labeler.value is None


async def test_a_failed_cdi_write_leaves_the_claim_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spec write and the PrepareCompleted record share a worker thread: when the spec
    cannot be written the claim is not recorded as completed, and the retry finishes it."""
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    claim = fx.claim("daemon", cd["metadata"]["uid"])

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(h.cdi, "write_claim", full)
    with pytest.raises(TemporaryError, match=r"writing the CDI spec: .*No space left"):
        await h.state.prepare(claim, requested_at=h.tick())
    stored = entry(h, claim)
    assert stored is not None
    assert stored.state is cp.ClaimState.PREPARE_STARTED
    monkeypatch.undo()
    await h.state.prepare(claim, requested_at=h.tick())
    stored = entry(h, claim)
    assert stored is not None
    assert stored.completed
    assert h.cdi.claim_uids() == {claim["metadata"]["uid"]}


async def test_the_label_stays_while_another_claim_of_its_domain_holds_it(tmp_path: Path) -> None:
    """Two claims of one domain hold the label (admin access shares the channel): the first
    one's unprepare keeps it, the last one's releases it. (A completed claim's prepare returns
    without labelling again, so a label released under it stayed missing: make faults.)"""
    h = fx.harness(tmp_path)
    cd = fx.domain()
    fx.set_ready(cd)
    h.cluster.add(cd)
    uid = cd["metadata"]["uid"]
    first = fx.claim("channel", uid, name="first")
    await h.state.prepare(first, requested_at=h.tick())
    second = _admin(fx.claim("channel", uid, name="second"))
    await h.state.prepare(second, requested_at=h.tick())
    await h.state.unprepare(ref(first))
    assert h.labeler.value == uid
    await h.state.prepare(second, requested_at=h.tick())  # completed: no new label write
    assert h.labeler.value == uid
    await h.state.unprepare(ref(second))
    assert h.labeler.value is None


async def test_a_started_claim_of_the_domain_keeps_the_label_too(tmp_path: Path) -> None:
    """A prepare that started (it waits for its daemon) holds the label it set: another claim
    of the domain going away leaves it."""
    h = fx.harness(tmp_path)
    cd = fx.domain()
    h.cluster.add(cd)  # not ready: a channel prepare labels the node, then waits
    uid = cd["metadata"]["uid"]
    waiting = fx.claim("channel", uid, name="waiting")
    with pytest.raises(Waiting):
        await h.state.prepare(waiting, requested_at=h.tick())
    other = _admin(fx.claim("channel", uid, name="other"))
    with pytest.raises(Waiting):
        await h.state.prepare(other, requested_at=h.tick())
    await h.state.unprepare(ref(other))
    assert h.labeler.value == uid
    await h.state.unprepare(ref(waiting))
    assert h.labeler.value is None
