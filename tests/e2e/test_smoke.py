"""Smoke: ``sim up`` gives a ready cluster and a kubeconfig, a pod runs on it, ``sim status``
shows it, and ``sim down`` stops every process it started and removes its state."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.resources import NAMESPACES, PODS
from tests.support.polling import eventually

from .conftest import SimUp, processes_mentioning


async def _run_pod(kubeconfig: Path) -> dict[str, object]:
    api = await connect(ClientConfig(kubeconfig=str(kubeconfig)))
    try:
        await api.create(NAMESPACES, {"metadata": {"name": "smoke"}})
        await api.create(
            PODS,
            {
                "metadata": {"name": "hello", "namespace": "smoke"},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "python",
                            "command": [
                                "python3",
                                "-c",
                                "import time; print('hello', flush=True); time.sleep(600)",
                            ],
                        }
                    ]
                },
            },
        )

        async def running() -> dict[str, object] | None:
            pod = await api.get(PODS, "hello", "smoke")
            return pod if (pod.get("status") or {}).get("phase") == "Running" else None

        return await eventually(running, within=60, every=0.1, what="pod smoke/hello Running")
    finally:
        await api.close()


def test_up_run_a_pod_status_down(sim_up: SimUp) -> None:
    assert sim_up.kubeconfig.is_file()
    state = json.loads((sim_up.state_dir / "cluster.json").read_text())
    assert state["phase"] == "Ready"
    pod = asyncio.run(_run_pod(sim_up.kubeconfig))
    pid = int(pod["status"]["containerStatuses"][0]["containerID"].removeprefix("sim://"))  # type: ignore[index]

    status = sim_up.cli("status").stdout
    assert "r0n0" in status
    assert "r0n1" in status
    assert "Ready" in status

    assert processes_mentioning(str(sim_up.state_dir))  # the cluster and the pod run
    sim_up.cli("down")
    assert processes_mentioning(str(sim_up.state_dir)) == []
    assert (
        not Path(f"/proc/{pid}").exists()
        or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:1]
    )
    assert not sim_up.state_dir.exists()
