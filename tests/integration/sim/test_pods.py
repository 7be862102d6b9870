"""Pods on the simulated cluster: placement, processes, env, files, probes, restarts and
termination, against the embedded API server with the real client."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from computedomain.kube.resources import PODS
from computedomain_sim.kubelet import isolation
from computedomain_sim.kubelet.launch import Isolation
from tests.support.clusters import running_cluster
from tests.support.polling import eventually

from .helpers import condition, events_for, gone, log_of, namespace, pod, ready_pod

MODES = [Isolation.PATHMAP] + ([Isolation.MOUNTNS] if isolation.mountns_available()[0] else [])

SHOW_ENV = (
    "import os, time\n"
    "hosts = open(os.environ.get('HOSTS_FILE', '/etc/hosts')).read()\n"
    "print('env', *(os.environ[k] for k in ('MY_NAME', 'MY_NS', 'MY_NODE', 'MY_IP')))\n"
    "print('hosts', [l for l in hosts.splitlines() if l.endswith(os.environ['MY_NAME'])])\n"
    "print('isolation', os.environ['CD_SIM_ISOLATION'])\n"
    "time.sleep(600)\n"
)
DOWNWARD = [
    {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "MY_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
]


@pytest.mark.parametrize("mode", MODES)
async def test_pods_run_with_their_own_address_env_and_hosts_file(
    tmp_path: Path, mode: Isolation
) -> None:
    async with running_cluster(tmp_path / "sim", isolation=mode) as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        for name in ("a", "b"):
            await api.create(PODS, pod(name, ns, SHOW_ENV, container={"env": DOWNWARD}))
        a, b = await ready_pod(api, "a", ns), await ready_pod(api, "b", ns)
        assert a["status"]["podIP"] != b["status"]["podIP"]
        assert a["status"]["podIP"].startswith("127.")
        assert a["status"]["phase"] == "Running"
        assert a["status"]["hostIP"] == cluster.kubelets[a["spec"]["nodeName"]].ctx.node.address
        ip = a["status"]["podIP"]
        line = await eventually(lambda: _line(cluster, a, "isolation"), what="container output")
        assert line == f"isolation {mode}"
        log = log_of(cluster, a)
        assert f"env a {ns} {a['spec']['nodeName']} {ip}" in log
        assert f"hosts ['{ip}\\ta']" in log
        # The two pods were spread over the two nodes.
        assert {a["spec"]["nodeName"], b["spec"]["nodeName"]} == {"r0n0", "r0n1"}


async def _line(cluster: Any, pod_obj: dict[str, Any], prefix: str) -> str | None:
    for line in log_of(cluster, pod_obj).splitlines():
        if line.startswith(prefix):
            return line
    return None


async def test_unschedulable_pod_says_why_as_kube_scheduler(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        await api.create(PODS, pod("lost", ns, "pass", nodeSelector={"rack": "nowhere"}))

        async def scheduled_condition() -> dict[str, Any] | None:
            return condition(await api.get(PODS, "lost", ns), "PodScheduled")

        found = await eventually(scheduled_condition, what="PodScheduled condition")
        assert (found["status"], found["reason"]) == ("False", "Unschedulable")
        assert (
            found["message"]
            == "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
        )
        events = await eventually(
            lambda: events_for(api, ns, "lost"), what="FailedScheduling event"
        )
        assert events[0]["reason"] == "FailedScheduling"


async def test_node_selector_and_init_containers(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        body = pod(
            "pinned",
            ns,
            "import time; print(open('/data/from-init').read()); time.sleep(600)",
            nodeSelector={"kubernetes.io/hostname": "r0n1"},
            volumes=[{"name": "data", "emptyDir": {}}],
            container={"volumeMounts": [{"name": "data", "mountPath": "/data"}]},
            initContainers=[
                {
                    "name": "init",
                    "image": "python",
                    "command": [
                        "python3",
                        "-c",
                        "open('/data/from-init', 'w').write('made by init')",
                    ],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
        )
        await api.create(PODS, body)
        running = await ready_pod(api, "pinned", ns)
        assert running["spec"]["nodeName"] == "r0n1"
        assert running["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
        assert condition(running, "Initialized")["status"] == "True"  # type: ignore[index]
        await eventually(
            lambda: _line(cluster, running, "made by init"), what="main read init's file"
        )


async def test_graceful_termination_then_deletion(tmp_path: Path) -> None:
    script = (
        "import signal, sys, time\n"
        "def bye(*_):\n    print('got SIGTERM', flush=True); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\nprint('up', flush=True)\ntime.sleep(600)\n"
    )
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        await api.create(PODS, pod("polite", ns, script))
        running = await ready_pod(api, "polite", ns)
        await eventually(lambda: _line(cluster, running, "up"), what="container started")
        await api.delete(PODS, "polite", ns)
        await gone(api, PODS, "polite", ns)
        assert "got SIGTERM" in log_of(cluster, running)
        pod_dir = cluster.kubelets[running["spec"]["nodeName"]].ctx.paths.pod_dir(
            running["metadata"]["uid"]
        )
        assert not pod_dir.exists()


async def test_force_delete_kills_at_once(tmp_path: Path) -> None:
    stubborn = (
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('up', flush=True)\ntime.sleep(600)\n"
    )
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        await api.create(PODS, pod("stubborn", ns, stubborn, terminationGracePeriodSeconds=300))
        running = await ready_pod(api, "stubborn", ns)
        await eventually(lambda: _line(cluster, running, "up"), what="container started")
        pid = int(running["status"]["containerStatuses"][0]["containerID"].removeprefix("sim://"))
        await api.delete(PODS, "stubborn", ns, grace_period_seconds=0)
        # Far below the 300 s grace period: only a kill without grace gets there.
        await gone(api, PODS, "stubborn", ns, within=60)
        await eventually(lambda: _dead(pid), within=60, what=f"process {pid} killed")


async def _dead(pid: int) -> bool:
    return _gone(pid)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # reaped between the two looks (open or read)
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def test_on_failure_restarts_until_success(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "if not os.path.exists('/data/tried'):\n"
        "    open('/data/tried', 'w').close(); print('first try fails'); sys.exit(3)\n"
        "print('second try works')\n"
    )
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        body = pod(
            "retry",
            ns,
            script,
            restartPolicy="OnFailure",
            volumes=[{"name": "data", "emptyDir": {}}],
            container={"volumeMounts": [{"name": "data", "mountPath": "/data"}]},
        )
        await api.create(PODS, body)

        async def finished() -> dict[str, Any] | None:
            current = await api.get(PODS, "retry", ns)
            return current if current.get("status", {}).get("phase") == "Succeeded" else None

        done = await eventually(finished, what="pod Succeeded")
        (status,) = done["status"]["containerStatuses"]
        assert status["restartCount"] == 1
        assert status["lastState"]["terminated"]["exitCode"] == 3
        assert status["state"]["terminated"]["reason"] == "Completed"


async def test_failing_liveness_probe_restarts_the_container(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        probe = {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 2}
        await api.create(
            PODS,
            pod("sick", ns, "import time; time.sleep(600)", container={"livenessProbe": probe}),
        )

        async def restarted() -> bool:
            current = await api.get(PODS, "sick", ns)
            statuses = current.get("status", {}).get("containerStatuses") or [{}]
            return int(statuses[0].get("restartCount") or 0) >= 1

        await eventually(restarted, what="container restarted by its liveness probe")
