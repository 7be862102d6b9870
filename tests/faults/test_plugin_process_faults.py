"""A real ``cd-kubelet-plugin`` process under the simulation-side faults that need no
simulation: SIGKILL at random moments and a full disk (``RLIMIT_FSIZE``) while it writes its
checkpoint and CDI specs, with API faults on as well; after quiescence the node's state is
consistent and the process never exited on its own."""

from __future__ import annotations

import asyncio
import json
import random
import signal
from pathlib import Path

import pytest

from computedomain.api import names
from computedomain.kubeletplugin import checkpoint as cp
from computedomain_sim.faults.apiserver import ApiFaults
from computedomain_sim.faults.disk import FullDisk
from computedomain_sim.faults.nodes import Reboot
from computedomain_sim.faults.processes import KillProcess
from computedomain_sim.faults.schedule import FaultScheduler, Rate, run_for
from tests.faults import harness, settings
from tests.faults.kubelet import Claim, Run, check_node
from tests.faults.test_plugin_api_faults import SPEC, claims_of_a_node
from tests.integration.kubeletplugin.conftest import DRIVER_NAMESPACE, ref

pytestmark = pytest.mark.slow


def plugin_table(plugin: harness.PluginProcess) -> dict[str, int]:
    pid = plugin.pid
    return {"plugin": pid} if pid is not None else {}


def corrupt_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "p" / names.DRIVER_NAME).glob("*.corrupt-*"))


async def test_full_disk_fails_the_claim_cleanly_and_the_plugin_serves_on(
    tmp_path: Path, short_dir: Path
) -> None:
    async with harness.faulty_cluster(ApiFaults("seed=1"), tmp_path) as cluster:
        cd = await cluster.world.domain("alpha")
        daemon = await cluster.world.claim(
            "daemon", cd["metadata"]["uid"], namespace=DRIVER_NAMESPACE
        )
        uid = daemon["metadata"]["uid"]
        root = short_dir / "n"
        plugin = harness.PluginProcess(harness.plugin_environment(root, cluster))
        await plugin.start()
        scheduler = FaultScheduler([], seed=1)
        disk = FullDisk(lambda: plugin_table(plugin))
        try:
            assert await scheduler.fire(disk) is not None
            async with await plugin.client() as kubelet:
                result = (await kubelet.prepare([ref(daemon)], deadline=2))[uid]
            assert "File too large" in result.error
            assert harness.injected(root, uid) == []  # nothing half-written
            await scheduler.heal()
            async with await plugin.client() as kubelet:
                result = (await kubelet.prepare([ref(daemon)], deadline=5))[uid]
            assert result.error == ""
            assert len(harness.injected(root, uid)) == 2
            await scheduler.fire(disk)
            async with await plugin.client() as kubelet:
                failed = await kubelet.unprepare([ref(daemon)], deadline=2)
            assert "File too large" in failed[uid]
            await scheduler.heal()
            async with await plugin.client() as kubelet:
                assert await kubelet.unprepare([ref(daemon)], deadline=5) == {uid: ""}
            assert harness.injected(root, uid) == []
            assert plugin.exits == []
            assert scheduler.counts["full-disk"] == 2
        finally:
            assert await plugin.stop() == 0, plugin.tail()


async def test_a_failed_unprepare_never_leaves_a_prepared_claim_without_its_cdi_spec(
    tmp_path: Path, short_dir: Path
) -> None:
    async with harness.faulty_cluster(ApiFaults("seed=1"), tmp_path) as cluster:
        cd = await cluster.world.domain("alpha")
        daemon = await cluster.world.claim(
            "daemon", cd["metadata"]["uid"], namespace=DRIVER_NAMESPACE
        )
        uid = daemon["metadata"]["uid"]
        root = short_dir / "n"
        plugin = harness.PluginProcess(harness.plugin_environment(root, cluster))
        await plugin.start()
        scheduler = FaultScheduler([], seed=1)
        try:
            async with await plugin.client() as kubelet:
                assert (await kubelet.prepare([ref(daemon)], deadline=5))[uid].error == ""
            await scheduler.fire(FullDisk(lambda: plugin_table(plugin)))
            async with await plugin.client() as kubelet:
                assert (await kubelet.unprepare([ref(daemon)], deadline=2))[uid]
            await scheduler.heal()
            # Another pod of the node uses the (shared) claim: the kubelet prepares it again.
            async with await plugin.client() as kubelet:
                result = (await kubelet.prepare([ref(daemon)], deadline=5))[uid]
            assert result.error == ""
            claim_ids = [i for d in result.devices for i in d.cdi_device_ids if "claim=" in i]
            assert claim_ids
            assert uid in harness.cdi_specs(root), "the prepared claim's CDI spec is missing"
        finally:
            await plugin.stop()


@pytest.mark.parametrize("seed", settings.seeds((21,), 3))
async def test_plugin_process_under_kills_full_disks_and_api_faults(
    seed: int, tmp_path: Path, short_dir: Path
) -> None:
    print(f"fault run: seed={seed} (replay: pytest tests/faults --faults-seed {seed})")
    rng = random.Random(seed)
    faults = ApiFaults(f"{SPEC},seed={seed}", enabled=False)
    async with harness.faulty_cluster(faults, tmp_path) as cluster:
        claims: list[Claim] = await claims_of_a_node(cluster)
        root = short_dir / "n"
        plugin = harness.PluginProcess(harness.plugin_environment(root, cluster))
        await plugin.start()
        scheduler = FaultScheduler(
            [
                Rate(KillProcess(lambda: plugin_table(plugin)), 0.3),
                Rate(FullDisk(lambda: plugin_table(plugin)), 0.5),
            ],
            seed=seed,
            hold=(0.2, 1.5),
        )
        run = Run(root, claims, cluster.api, cluster.world.node, rng, plugin.client)
        try:
            faults.enabled = True
            steps = int(settings.scale(12, 60))

            async def traffic() -> None:
                for _ in range(steps):
                    await run.step()

            traffic_task = asyncio.create_task(traffic())
            chaos = asyncio.create_task(run_for(scheduler, 3600))
            await traffic_task
            chaos.cancel()
            await asyncio.gather(chaos, return_exceptions=True)
            await scheduler.heal()
            faults.enabled = False
            print("api faults:", json.dumps(faults.report()))
            print("scheduled faults:", json.dumps(scheduler.report()))
            print("steps:", "; ".join(run.steps), f"(races: {run.races})")
            await plugin.serving()
            channels = [c for c in claims if c.kind == "channel" and c.ready]
            winner = rng.choice(channels)
            daemon = next(c for c in claims if c.kind == "daemon")
            await run.settle([winner, daemon])
            kills = scheduler.counts["kill"]
            assert plugin.exits == [-signal.SIGKILL] * kills, plugin.tail()
            assert corrupt_files(root) == []  # atomic writes: a kill never tears a file
            # No prepared claim without its CDI spec: the unprepare order drops the entry first.
            for uid in (winner.uid, daemon.uid):
                assert uid in harness.cdi_specs(root), f"prepared claim {uid} lost its CDI spec"
            await check_node(run, winner.domain)
            cp.decode(harness.checkpoint_path(root).read_bytes())
        finally:
            await scheduler.heal()
            await plugin.stop()


async def prepared_node(
    cluster: harness.Cluster, root: Path
) -> tuple[harness.PluginProcess, list[dict[str, object]], str]:
    """A plugin process with a daemon claim and a channel claim of a Ready domain prepared."""
    cd = await cluster.world.domain("alpha")
    uid = cd["metadata"]["uid"]
    await cluster.world.daemon_ready(cd)
    daemon = await cluster.world.claim("daemon", uid, namespace=DRIVER_NAMESPACE)
    channel = await cluster.world.claim("channel", uid)
    plugin = harness.PluginProcess(harness.plugin_environment(root, cluster))
    await plugin.start()
    async with await plugin.client() as kubelet:
        results = await kubelet.prepare([ref(daemon), ref(channel)], deadline=10)
    assert all(r.error == "" for r in results.values()), results
    assert await cluster.world.node_label() == uid
    return plugin, [daemon, channel], uid


async def test_after_a_reboot_the_plugin_starts_clean_and_claims_prepare_again(
    tmp_path: Path, short_dir: Path
) -> None:
    async with harness.faulty_cluster(ApiFaults("seed=1"), tmp_path) as cluster:
        root = short_dir / "n"
        plugin, claims, uid = await prepared_node(cluster, root)
        try:
            scheduler = FaultScheduler([], seed=1)
            assert await scheduler.fire(Reboot(lambda: {"n": plugin.reboot})) is not None
            checkpoint = harness.read_checkpoint(root)
            assert checkpoint.claims == {}  # written in another boot: dropped (#951)
            assert checkpoint.boot_id == (root / "boot_id").read_text().strip()
            assert harness.cdi_specs(root) == {}
            # The kubelet restarts the pods: their claims are prepared again.
            async with await plugin.client() as kubelet:
                results = await kubelet.prepare([ref(c) for c in claims], deadline=10)
            assert all(r.error == "" for r in results.values()), results
            assert set(harness.cdi_specs(root)) == {c["metadata"]["uid"] for c in claims}
            assert await cluster.world.node_label() == uid
            assert plugin.exits == []
        finally:
            assert await plugin.stop() == 0, plugin.tail()


async def test_after_a_reboot_unprepare_leaves_no_label_behind(
    tmp_path: Path, short_dir: Path
) -> None:
    async with harness.faulty_cluster(ApiFaults("seed=1"), tmp_path) as cluster:
        root = short_dir / "n"
        plugin, claims, _ = await prepared_node(cluster, root)
        try:
            await plugin.reboot()
            # The pods were deleted meanwhile: the kubelet unprepares their claims.
            async with await plugin.client() as kubelet:
                errors = await kubelet.unprepare([ref(c) for c in claims], deadline=10)
            assert set(errors.values()) == {""}
            assert harness.read_checkpoint(root).claims == {}
            assert await cluster.world.node_label() is None, "no prepared claim holds the node"
        finally:
            await plugin.stop()
