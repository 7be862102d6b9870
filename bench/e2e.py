"""End-to-end timings of the simulated cluster (skeleton; the ComputeDomain scenarios join in
the second phase): how long the cluster takes to come up, a pod to become Ready, and a pod and
the cluster to go away.

Run: ``python bench/e2e.py [--racks R] [--nodes-per-rack N] [--pods P] [--manifests]``; prints
one JSON document. Everything runs in this process (API server, controllers, kubelets) and
the pods are real processes (``python3 -c 'sleep'``). ``--manifests`` installs
``deployments/overlays/sim`` first (its components' pods then run too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from computedomain.kube import errors
from computedomain.kube.resources import NAMESPACES, PODS
from computedomain.kube.rest import Api
from computedomain.sim.cluster.cluster import DEFAULT_MANIFESTS, ClusterConfig, SimCluster
from computedomain.sim.cluster.topology import Topology


def _pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {
            "terminationGracePeriodSeconds": 5,
            "containers": [
                {
                    "name": "main",
                    "image": "python",
                    "command": ["python3", "-c", "import time; time.sleep(600)"],
                }
            ],
        },
    }


async def _until(api: Api, name: str, *, ready: bool) -> None:
    while True:
        try:
            pod = await api.get(PODS, name, "bench")
        except errors.NotFound:
            if not ready:
                return
        else:
            conditions = (pod.get("status") or {}).get("conditions") or []
            if ready and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                return
        await asyncio.sleep(0.01)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cd-bench-") as state:
        config = ClusterConfig(
            state_dir=Path(state),
            topology=Topology(args.racks, args.nodes_per_rack, seed=state),
            manifests=DEFAULT_MANIFESTS if args.manifests else None,
        )
        cluster = SimCluster(config)
        started = time.perf_counter()
        await cluster.start()
        await cluster.wait_ready(components=False)
        up = time.perf_counter() - started
        api = cluster.api
        assert api is not None
        await api.create(NAMESPACES, {"metadata": {"name": "bench"}})
        ready: list[float] = []
        for i in range(args.pods):
            t0 = time.perf_counter()
            await api.create(PODS, _pod(f"p{i}"))
            await _until(api, f"p{i}", ready=True)
            ready.append(time.perf_counter() - t0)
        gone: list[float] = []
        for i in range(args.pods):
            t0 = time.perf_counter()
            await api.delete(PODS, f"p{i}", "bench")
            await _until(api, f"p{i}", ready=False)
            gone.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await cluster.stop()
        down = time.perf_counter() - t0
        return {
            "benchmark": "e2e",
            "python": platform.python_version(),
            "nodes": args.racks * args.nodes_per_rack,
            "isolation": str(cluster.isolation),
            "manifests": bool(args.manifests),
            "cluster_up_s": round(up, 3),
            "pod_ready_s": {
                "median": round(statistics.median(ready), 3),
                "max": round(max(ready), 3),
            },
            "pod_deleted_s": {
                "median": round(statistics.median(gone), 3),
                "max": round(max(gone), 3),
            },
            "cluster_down_s": round(down, 3),
            "pods": args.pods,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--racks", type=int, default=2)
    parser.add_argument("--nodes-per-rack", type=int, default=2)
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--manifests", action="store_true")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(measure(args)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
