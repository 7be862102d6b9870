"""Randomized fault runs over the whole simulated cluster, with the real processes.

While domains are created, used (their workers Running) and deleted, a seeded
:class:`~computedomain_sim.faults.schedule.FaultScheduler` SIGKILLs the controller, a kubelet
plugin, an IMEX daemon or an ``nvidia-imex`` stand-in, reboots a node (new boot ID, CDI
directory wiped, pods restarted) and fills the disk of a plugin (``RLIMIT_FSIZE``), with the
API server's faults on for our three programs (conflicts, throttling, errors, lost answers,
latency, dropped and expired watches). Then every fault stops and the run waits for the
invariants of :mod:`tests.faults.invariants` to hold; the violations left at the deadline fail
the run.

The seed is printed; ``pytest tests/faults/test_cluster_faults.py --faults-seed N`` replays the
schedule (the times, kinds and target choices of the events, and the workload's choices; the
moments the processes reach are the machine's). Each run records one summary line (seed, faults
by kind, violations), printed at the end of the session (``conftest.pytest_terminal_summary``).
The short set (``make test``): one seed on two nodes. The long set (``make faults``): more
seeds, four nodes in two racks (two cliques), more domains.

With ``--control-plane=kube`` (``make test-kube`` runs the short set so) the cluster runs on
Kubernetes' own control plane, with the same schedule of kills, reboots and full disks and the
same invariants, and without the API server's faults: only the embedded server injects them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain_sim.faults.apiserver import ApiFaults
from computedomain_sim.faults.disk import FullDisk
from computedomain_sim.faults.nodes import Reboot
from computedomain_sim.faults.processes import KillProcess
from computedomain_sim.faults.schedule import Fault, FaultScheduler, Rate
from tests.faults import invariants, settings
from tests.faults.sim import AGENTS, Processes, Workload, faulty_sim, hosts_reader, nodes_of
from tests.support.polling import holds_within

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.xdist_group("cluster-faults"),  # one run at a time on a 2-core machine
]

REPLAY = "tests/faults/test_cluster_faults.py"
API_SPEC = (
    "409=0.1,429=0.03,500=0.03,503=0.03,retry-after=50ms,"
    "latency=0..20ms,latency-rate=0.2,"
    f"watch-drop=0.1,watch-expire=0.05,watch-after=200ms..3s,agents={AGENTS};"
    f"504=0.03,verbs=writes,agents={AGENTS}"
)
# Events per second of each scheduled fault (times the run's ``scale``).
RATES = {
    "kill-controller": 0.04,
    "kill-plugin": 0.05,
    "kill-daemon": 0.04,
    "kill-imex": 0.05,
    "reboot": 0.025,
    "full-disk": 0.05,
}


def faults_for(cluster: Any, processes: Processes) -> dict[str, Fault]:
    """Every scheduled fault of a run, by kind."""
    return {
        "kill-controller": KillProcess(lambda: processes.of("controller"), kind="kill-controller"),
        "kill-plugin": KillProcess(lambda: processes.of("plugin"), kind="kill-plugin"),
        "kill-daemon": KillProcess(lambda: processes.of("daemon"), kind="kill-daemon"),
        "kill-imex": KillProcess(lambda: processes.of("imex"), kind="kill-imex"),
        "reboot": Reboot(lambda: {n: k.reboot for n, k in cluster.kubelets.items()}),
        "full-disk": FullDisk(lambda: processes.of("plugin")),
    }


def scheduler_for(faults: dict[str, Fault], seed: int, scale: float) -> FaultScheduler:
    return FaultScheduler(
        [Rate(fault, RATES[kind] * scale) for kind, fault in faults.items()],
        seed=seed,
        hold=(0.5, 4.0),
    )


async def keep_fresh(processes: Processes) -> None:
    while True:
        await processes.refresh()
        await asyncio.sleep(0.25)


async def traffic(
    workload: Workload, rng: random.Random, nodes: int, steps: int, run_wait: float
) -> list[str]:
    """Create, use and delete domains: each step creates one (when nodes are free) or waits
    for the oldest to run and deletes it. Returns what it saw (for the report)."""
    seen = []
    for _ in range(steps):
        free = workload.free_nodes(nodes)
        if free and (not workload.live or rng.random() < 0.6):
            size = rng.randint(1, free)
            ns = await workload.create(size)
            seen.append(f"create {ns}({size})")
            continue
        ns = next(iter(workload.live))
        ran = await holds_within(functools.partial(workload.running, ns), run_wait, every=0.5)
        seen.append(f"{'ran' if ran else 'never ran'} {ns}")
        await workload.delete(ns)
    for ns in list(workload.live):  # every live domain runs before the faults stop
        ran = await holds_within(functools.partial(workload.running, ns), run_wait, every=0.5)
        seen.append(f"{'ran' if ran else 'never ran'} {ns}")
    return seen


def explained(scheduler: FaultScheduler) -> invariants.Explained:
    by_target = scheduler.counts.by_target()

    def per_node(kind: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for target, count in by_target.get(kind, {}).items():
            node = target.split("/", 1)[0]
            out[node] = out.get(node, 0) + count
        return out

    return invariants.Explained(
        plugin_kills=per_node("kill-plugin"),
        daemon_kills=per_node("kill-daemon"),
        reboots=per_node("reboot"),
        controller_kills=scheduler.counts["kill-controller"],
    )


async def fault_run(seed: int, state_dir: Path, *, racks: int, per_rack: int, steps: int,
                    scale: float, settle: float, force_all: bool,
                    control_plane: str = "embedded") -> dict[str, Any]:  # fmt: skip
    """One run on ``control_plane`` (API faults on the embedded one only); its summary
    (seed, faults by kind, violations, timings)."""
    rng = random.Random(seed)
    nodes = racks * per_rack
    faults = ApiFaults(f"{API_SPEC},seed={seed}", enabled=False)
    api_faults = faults if control_plane == "embedded" else None
    started = time.monotonic()
    async with faulty_sim(
        state_dir, api_faults, racks=racks, nodes_per_rack=per_rack, control_plane=control_plane
    ) as cluster:
        assert cluster.api is not None
        api = cluster.api
        up = time.monotonic() - started
        processes = Processes(api)
        await processes.refresh()
        # Every component is a target from the start (a kill that finds nothing is no fault).
        assert processes.of("controller"), processes.table
        assert len(processes.of("plugin")) == nodes, processes.table
        faults_by_kind = faults_for(cluster, processes)
        scheduler = scheduler_for(faults_by_kind, seed, scale)
        workload = Workload(api)
        refresher = asyncio.create_task(keep_fresh(processes))
        chaos = asyncio.create_task(scheduler.run())
        faults.enabled = True
        try:
            seen = await traffic(workload, rng, nodes, steps, 90 if force_all else 30)
            # In the long set every kind strikes at least once, while the live domains run
            # (one at a time: the schedule stops first, so two reboots never overlap). The short
            # set leaves it to the schedule, to stay within its time.
            chaos.cancel()
            await asyncio.gather(chaos, return_exceptions=True)
            kinds = sorted(faults_by_kind) if force_all else []
            for kind in rng.sample(kinds, len(kinds)):
                if scheduler.counts[kind] == 0:
                    # Live domains have daemons and stand-ins, so each kind finds a target
                    # (within a while: an earlier fault may be restarting the one there is).
                    fired: list[object] = []

                    async def fire(kind: str = kind, fired: list[object] = fired) -> bool:
                        await processes.refresh()
                        event = await scheduler.fire(faults_by_kind[kind])
                        if event is not None:
                            fired.append(event)
                        return bool(fired) or not workload.live

                    await holds_within(fire, seconds=30, every=0.5)
                    seen.append(f"{kind} {'fired' if fired else 'found no target'}")
                    assert fired or not workload.live, f"{kind} found no target"
            # End with some domains deleted and some live: both kinds of invariant apply.
            if workload.live and rng.random() < 0.5:
                await workload.delete(next(iter(workload.live)))
        finally:
            chaos.cancel()
            await asyncio.gather(chaos, return_exceptions=True)
            await scheduler.heal()
            faults.enabled = False
            refresher.cancel()
            await asyncio.gather(refresher, return_exceptions=True)
        quiet = time.monotonic()
        policy_name = names.dns_name

        async def violations() -> list[str]:
            return await invariants.check(
                api,
                nodes_of(cluster),
                gone=workload.gone,
                explained=explained(scheduler),
                hosts_of=hosts_reader(cluster),
                dns_name=policy_name,
            )

        left: list[str] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settle
        while True:
            left = await violations()
            if not left or loop.time() > deadline:
                break
            await asyncio.sleep(1.0)
        if left:
            where = await keep(api, state_dir, seed)
            (where / "schedule.json").write_text(json.dumps(scheduler.report(), indent=1))
            print(f"violations: the cluster is kept in {where}")
        api_report = faults.report()
        return {
            "seed": seed,
            "controlPlane": control_plane,
            "nodes": nodes,
            "domains": workload.created,
            "deleted": len(workload.gone),
            "faults": {
                **scheduler.counts.by_kind(),
                **{f"api-{k}": v for k, v in (api_report.get("injected") or {}).items()},
            },
            "violations": left,
            "steps": seen,
            "seconds": {
                "up": round(up, 1),
                "faults": round(quiet - started - up, 1),
                "settle": round(time.monotonic() - quiet, 1),
            },
        }


async def keep(api: Any, state_dir: Path, seed: int) -> Path:
    """The nodes' files and logs and the API's objects, for the post-mortem of a run with
    violations (outside pytest's temporary directories, which other sessions rotate)."""
    where = Path(tempfile.mkdtemp(prefix=f"cd-faults-seed{seed}-"))
    ignore = shutil.ignore_patterns("*.sock")
    await asyncio.to_thread(
        shutil.copytree, state_dir, where / "state", symlinks=True, ignore=ignore
    )
    for resource in (
        resources.PODS,
        resources.RESOURCE_CLAIMS,
        resources.COMPUTE_DOMAINS,
        resources.COMPUTE_DOMAIN_CLIQUES,
        resources.NODES,
        resources.EVENTS,
    ):
        items, _ = await api.list_all(resource)
        (where / f"{resource.plural}.json").write_text(json.dumps(items, indent=1))
    return where


def summary_line(run: dict[str, Any]) -> str:
    faults = ",".join(f"{k}={v}" for k, v in sorted(run["faults"].items()))
    return (
        f"seed={run['seed']} control-plane={run['controlPlane']} nodes={run['nodes']} "
        f"domains={run['domains']} "
        f"deleted={run['deleted']} faults[{faults}] violations={len(run['violations'])} "
        f"seconds={json.dumps(run['seconds'], separators=(',', ':'))}"
    )


@pytest.mark.parametrize("seed", settings.seeds((1,), 2))
async def test_cluster_under_faults_settles_with_every_invariant(
    seed: int, tmp_path: Path, record_property: Any, control_plane: str
) -> None:
    long = " --faults-long" if settings.LONG else ""
    kube = " --control-plane=kube" if control_plane == "kube" else ""
    print(f"fault run: seed={seed} (replay: pytest {REPLAY}{long}{kube} --faults-seed {seed})")
    if settings.LONG:
        run = await fault_run(
            seed,
            tmp_path / "sim",
            racks=2,
            per_rack=2,
            steps=6,
            scale=1.0,
            settle=180,
            force_all=True,
            control_plane=control_plane,
        )
    else:
        run = await fault_run(
            seed,
            tmp_path / "sim",
            racks=1,
            per_rack=2,
            steps=2,
            scale=1.0,
            settle=90,
            force_all=False,
            control_plane=control_plane,
        )
    line = summary_line(run)
    record_property("fault_run", line)
    print(line)
    print("steps:", "; ".join(run["steps"]))
    for violation in run["violations"]:
        print("violation:", violation)
    assert run["violations"] == [], line
