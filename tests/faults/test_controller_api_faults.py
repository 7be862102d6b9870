"""The controller (in-process) reconciling random domain churn while the API server injects
every kind of fault at it; after quiescence every live domain has exactly its objects and
finalizer, every deleted domain is gone with everything it owned, and nothing is orphaned.
Each run prints its seed; ``--faults-seed N`` replays it."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from computedomain.api import names
from computedomain.controller.main import COMPONENT
from computedomain.kube import errors, resources
from computedomain_sim.faults.apiserver import ApiFaults
from tests.faults import harness, settings
from tests.integration.controller.harness import Bench, entry, next_ip

SPEC = (
    "409=0.15,429=0.05,500=0.05,503=0.05,504=0.05,retry-after=10ms,"
    "latency=0..20ms,latency-rate=0.3,"
    "watch-drop=0.15,watch-expire=0.1,watch-after=50ms..1s,"
    f"agents={COMPONENT}*"
)


class Churn:
    """The users, kubelets and daemons: create and delete domains, join and leave nodes."""

    def __init__(self, world: Bench, rng: random.Random) -> None:
        self.world = world
        self.rng = rng
        self.live: dict[str, str] = {}  # name -> uid
        self.deleted: dict[str, str] = {}
        self.nodes: dict[str, list[str]] = {}  # uid -> nodes whose daemons joined
        self.serial = 0
        self.steps: list[str] = []
        self.counters: dict[str, str] = {}  # node -> the last value another party wrote

    async def create(self) -> None:
        self.serial += 1
        name = f"cd{self.serial}"
        created = await self.world.create_domain(name, num_nodes=self.rng.randint(0, 2))
        self.live[name] = created["metadata"]["uid"]
        self.steps.append(f"create {name}")

    async def delete(self) -> None:
        name = self.rng.choice(sorted(self.live))
        uid = self.live.pop(name)
        await self.world.api.delete(resources.COMPUTE_DOMAINS, name, self.world.user)
        self.deleted[name] = uid
        self.steps.append(f"delete {name}")

    async def join(self) -> None:
        name = self.rng.choice(sorted(self.live))
        uid = self.live[name]
        joined = self.nodes.setdefault(uid, [])
        node = f"n-{uid[:6]}-{len(joined)}"
        await self.world.add_node(node, uid)
        pod = await self.world.daemon_pod(uid, node, ready=self.rng.random() < 0.7)
        joined.append(node)
        ips = [next_ip() for _ in joined[:-1]] + [pod["status"]["podIP"]]
        await self.world.set_clique(
            uid, [entry(n, ip, index=i) for i, (n, ip) in enumerate(zip(joined, ips, strict=True))]
        )
        self.steps.append(f"join {name} {node}")

    async def other_writer(self) -> None:
        node = self.rng.choice(sorted(n for joined in self.nodes.values() for n in joined))
        self.counters[node] = await harness.bump_node_annotation(self.world.api, node)
        self.steps.append(f"write {node}")

    async def step(self) -> None:
        roll = self.rng.random()
        if not self.live or roll < 0.35:
            await self.create()
        elif roll < 0.55:
            await self.delete()
        elif roll < 0.85 or not self.nodes:
            await self.join()
        else:
            await self.other_writer()


async def settled(bench: Bench, churn: Churn) -> list[str]:
    """What is still wrong (empty once the controller has caught up)."""
    problems: list[str] = []
    api, driver, user = bench.api, bench.driver, bench.user
    domains = {
        d["metadata"]["name"]: d for d in (await api.list_all(resources.COMPUTE_DOMAINS, user))[0]
    }
    daemon_sets = {
        d["metadata"]["name"] for d in (await api.list_all(resources.DAEMON_SETS, driver))[0]
    }
    driver_rcts = {
        d["metadata"]["name"]
        for d in (await api.list_all(resources.RESOURCE_CLAIM_TEMPLATES, driver))[0]
    }
    user_rcts = {
        d["metadata"]["name"]
        for d in (await api.list_all(resources.RESOURCE_CLAIM_TEMPLATES, user))[0]
    }
    for name, uid in churn.live.items():
        domain = domains.get(name)
        if domain is None:
            problems.append(f"{name}: the live domain is gone")
            continue
        if domain["metadata"].get("finalizers") != [names.FINALIZER]:
            problems.append(f"{name}: finalizers {domain['metadata'].get('finalizers')}")
        if "status" not in domain:
            problems.append(f"{name}: no status")
        object_name = names.daemon_object_name(uid)
        if object_name not in daemon_sets:
            problems.append(f"{name}: no DaemonSet")
        if object_name not in driver_rcts:
            problems.append(f"{name}: no daemon ResourceClaimTemplate")
        if f"{name}-channel" not in user_rcts:
            problems.append(f"{name}: no workload ResourceClaimTemplate")
    live_objects = {names.daemon_object_name(uid) for uid in churn.live.values()}
    for name, uid in churn.deleted.items():
        if name in domains:
            problems.append(
                f"{name}: the deleted domain still exists ({domains[name]['metadata']})"
            )
        if f"{name}-channel" in user_rcts:
            problems.append(f"{name}: its workload ResourceClaimTemplate is left")
        for node in churn.nodes.get(uid, []):
            try:
                labels = (await api.get(resources.NODES, node))["metadata"].get("labels") or {}
            except errors.NotFound:
                continue
            if labels.get(names.COMPUTE_DOMAIN_LABEL) == uid:
                problems.append(f"{name}: node {node} still labelled")
    for node, value in churn.counters.items():  # no write of the controller undid another's
        if await harness.node_annotation(api, node) != value:
            problems.append(f"node {node}: another party's write was lost")
    problems += [f"orphaned DaemonSet {n}" for n in daemon_sets - live_objects]
    problems += [f"orphaned daemon template {n}" for n in driver_rcts - live_objects]
    return problems


@pytest.mark.parametrize("seed", settings.seeds((31, 32), 6))
async def test_controller_under_api_faults(seed: int, tmp_path: Path) -> None:
    print(f"fault run: seed={seed} (replay: pytest tests/faults --faults-seed {seed})")
    rng = random.Random(seed)
    faults = ApiFaults(f"{SPEC},seed={seed}", enabled=False)
    async with harness.faulty_cluster(faults, tmp_path) as cluster:
        driver, user = "drv-faults", cluster.world.namespace
        await cluster.api.create(resources.NAMESPACES, {"metadata": {"name": driver}})
        api = await cluster.component_api(COMPONENT)
        controller = Bench(api, driver, user)
        world = Bench(cluster.api, driver, user)
        churn = Churn(world, rng)
        try:
            await controller.start(controller.config(cleanup_interval=2.0))
            faults.enabled = True
            faults.drop_watches()  # the informers watch again, under the faults
            async with harness.chaos(harness.watch_chaos(faults, seed)) as scheduler:
                for _ in range(int(settings.scale(12, 80))):
                    await churn.step()
                    # Pace the churn so that the controller works under the faults meanwhile
                    # (load shaping, not synchronisation: nothing waits for an outcome).
                    await asyncio.sleep(rng.uniform(0.0, 0.3))
                await asyncio.sleep(settings.scale(1.5, 10.0))
            faults.enabled = False
            print("faults:", json.dumps(faults.report()))
            print("watch chaos:", json.dumps(scheduler.counts.by_kind()))
            print("steps:", "; ".join(churn.steps))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while problems := await settled(world, churn):
                assert loop.time() < deadline, f"not settled after 60 s: {problems}"
                await asyncio.sleep(0.1)
            assert all(not t.done() for t in controller.tasks), "the controller stopped"
        finally:
            await controller.stop()
            await api.close()
    assert faults.counts.total() > 0
