"""Cleanup of stale half-prepared claims, expired aborted entries, orphaned CDI specs and
deleted domains' directories."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from computedomain.kubeletplugin.checkpoint import ClaimState
from computedomain.kubeletplugin.cleanup import Cleanup
from computedomain.kubeletplugin.nodelock import NodeLock
from computedomain.kubeletplugin.ports import Waiting
from computedomain.proto import dra
from tests.unit.kubeletplugin import fixtures as fx


def cleanup_for(
    h: fx.Harness, claims: dict[tuple[str, str], Mapping[str, Any] | Exception]
) -> Cleanup:
    async def lookup(namespace: str, name: str) -> Mapping[str, Any] | None:
        found = claims.get((namespace, name))
        if isinstance(found, Exception):
            raise found
        return found

    return Cleanup(
        state=h.state,
        lock=NodeLock(h.root / "pu.lock"),
        checkpoints=h.checkpoints,
        cdi=h.cdi,
        cluster=h.cluster,
        domains_root=h.state.facts.domains_root,
        lookup=lookup,
    )


def ref(claim: Mapping[str, Any]) -> dra.ClaimRef:
    meta = claim["metadata"]
    return dra.ClaimRef(meta["namespace"], meta["uid"], meta["name"])


async def waiting_claim(h: fx.Harness, cd_uid: str, name: str) -> dict[str, Any]:
    claim = fx.claim("channel", cd_uid, name=name)
    with pytest.raises(Waiting):
        await h.state.prepare(claim, requested_at=h.tick())
    return claim


async def test_stale_claims(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd_uid = h.cluster.add(fx.domain())["metadata"]["uid"]
    gone = await waiting_claim(h, cd_uid, "gone")
    recreated = await waiting_claim(h, cd_uid, "recreated")
    alive = await waiting_claim(h, cd_uid, "alive")
    unknown = await waiting_claim(h, cd_uid, "unknown")
    newer = {"metadata": {**recreated["metadata"], "uid": fx.new_uid()}}
    claims: dict[tuple[str, str], Any] = {
        ("team-a", "recreated"): newer,
        ("team-a", "alive"): alive,
        ("team-a", "unknown"): RuntimeError("API unreachable"),
    }
    removed = await cleanup_for(h, claims).stale_claims()
    assert sorted(removed) == sorted([gone["metadata"]["uid"], recreated["metadata"]["uid"]])
    checkpoint = h.checkpoints.read()
    left = {uid for uid, _ in checkpoint.live()}
    assert left == {alive["metadata"]["uid"], unknown["metadata"]["uid"]}
    # As upstream: a stale started claim ends PrepareAborted (a retry of it may still run).
    for claim in (gone, recreated):
        entry = checkpoint.claims[claim["metadata"]["uid"]]
        assert (entry.state, entry.name) == (ClaimState.PREPARE_ABORTED, claim["metadata"]["name"])
    # The claims left still hold their domain's label: removing the stale ones keeps it.
    assert h.labeler.value == cd_uid
    assert ("release", cd_uid) not in h.labeler.calls


async def test_orphaned_specs_and_domain_dirs(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    kept = fx.claim("daemon", cd["metadata"]["uid"])
    await h.state.prepare(kept, requested_at=h.tick())
    spec = h.cdi.claim_path(kept["metadata"]["uid"]).read_text()
    orphan = fx.new_uid()
    h.cdi.claim_path(orphan).write_text(spec)
    gone_dir = h.state.facts.domains_root / "deleted-domain"
    gone_dir.mkdir(parents=True)
    (gone_dir / "nodes.cfg").write_text("x")
    cleanup = cleanup_for(h, {})
    assert await cleanup.orphaned_specs() == [orphan]
    assert h.cdi.claim_uids() == {kept["metadata"]["uid"]}
    assert await cleanup.domain_dirs() == ["deleted-domain"]
    assert sorted(p.name for p in h.state.facts.domains_root.iterdir()) == [cd["metadata"]["uid"]]
    await cleanup.run_once()  # idempotent
    assert h.cdi.claim_uids() == {kept["metadata"]["uid"]}


async def test_expired_aborted_entries_go_and_fresh_ones_stay(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd_uid = h.cluster.add(fx.domain())["metadata"]["uid"]
    completed = fx.claim("daemon", cd_uid)
    await h.state.prepare(completed, requested_at=h.tick())
    old = await waiting_claim(h, cd_uid, "old")
    await h.state.unprepare(ref(old))
    h.tick(60)
    fresh = await waiting_claim(h, cd_uid, "fresh")
    await h.state.unprepare(ref(fresh))
    h.tick(30)  # old: 90 s, fresh: 30 s
    cleanup = cleanup_for(h, {})
    await cleanup.run_once()
    claims = h.checkpoints.read().claims
    assert set(claims) == {completed["metadata"]["uid"], fresh["metadata"]["uid"]}
    assert claims[fresh["metadata"]["uid"]].aborted
    assert await cleanup.expired_aborted() == 0
    h.tick(60)
    assert await cleanup.expired_aborted() == 1
    assert set(h.checkpoints.read().claims) == {completed["metadata"]["uid"]}


async def test_a_spec_of_an_aborted_claim_is_orphaned(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    kept = fx.claim("daemon", cd["metadata"]["uid"])
    await h.state.prepare(kept, requested_at=h.tick())
    aborted = fx.claim("daemon", cd["metadata"]["uid"])
    await h.state.unprepare(ref(aborted), prepare_in_flight=True)
    h.cdi.claim_path(aborted["metadata"]["uid"]).write_text(
        h.cdi.claim_path(kept["metadata"]["uid"]).read_text()
    )
    assert await cleanup_for(h, {}).orphaned_specs() == [aborted["metadata"]["uid"]]
    assert h.cdi.claim_uids() == {kept["metadata"]["uid"]}


async def test_a_domain_dir_is_kept_while_a_daemon_claim_holds_it(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    cd = h.cluster.add(fx.domain())
    uid = cd["metadata"]["uid"]
    daemon = fx.claim("daemon", uid)
    await h.state.prepare(daemon, requested_at=h.tick())
    h.cluster.domains.pop(uid)  # the domain is gone; its daemon has not been unprepared yet
    cleanup = cleanup_for(h, {})
    assert await cleanup.domain_dirs() == []
    await h.state.forget(daemon["metadata"]["uid"])
    assert await cleanup.domain_dirs() == [uid]


async def test_a_kick_runs_the_cleanup_before_the_period(tmp_path: Path) -> None:
    h = fx.harness(tmp_path)
    first = h.state.facts.domains_root / "removed-at-start"
    first.mkdir(parents=True)
    later = h.state.facts.domains_root / "deleted-later"
    cleanup = cleanup_for(h, {})
    runner = asyncio.create_task(cleanup.run(interval=3600))
    try:
        await removed(first)  # the run at start is over
        later.mkdir()
        cleanup.kick()
        await removed(later)  # long before the period
    finally:
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner


async def removed(path: Path) -> None:
    for _ in range(1000):
        if not await asyncio.to_thread(path.exists):
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"{path} still there after 10 s")


async def test_a_shutdown_mid_step_stops_the_cleanup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin's shutdown closes the node lock and cancels the cleanup while a step holds
    the lock; the cleanup must end (it once swallowed the cancellation and ran on forever)."""
    h = fx.harness(tmp_path)
    cleanup = cleanup_for(h, {})
    inside = threading.Event()
    release = threading.Event()
    listed = h.cdi.claim_uids

    def slow_listing() -> set[str]:
        inside.set()
        release.wait(10)
        return listed()

    monkeypatch.setattr(h.cdi, "claim_uids", slow_listing)
    runner = asyncio.create_task(cleanup.run(interval=0.01))
    assert await asyncio.to_thread(inside.wait, 10)
    cleanup.lock.close()
    runner.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(runner, 10)
