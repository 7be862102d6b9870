"""Prepare/unprepare latency of cd-kubelet-plugin through gRPC, and its peak memory.

Runs the embedded API server in this process and the plugin as a real ``cd-kubelet-plugin``
process (fake NVML), registers as the kubelet would, then for N channel claims of a Ready domain
and N daemon claims: creates the allocated claim through the API (not timed), then times
NodePrepareResources and NodeUnprepareResources (v1) one claim at a time. Prints one JSON
document: p50/p99/mean/max per operation in milliseconds, the plugin's CPU time per claim, its
peak RSS (VmHWM) in MB, the machine's load, the round-trip floor before and after (an empty
NodePrepareResources and an API GET: see :func:`floor`), and the targets (p50 <= 3 ms, p99 <=
15 ms, RSS <= 80 MB).

The plugin's data directory (checkpoint, lock, sockets) goes under ``--data-dir`` (default
/tmp, a disk here, as /var/lib/kubelet is in production), the CDI root under ``--cdi-dir``
(default /dev/shm: tmpfs, as /var/run/cdi is in production). ``--nvml-backend real`` runs the
plugin's production NVML backend on the mock NVML library (docs/nvml-mock.md) instead of the fake
one; the plugin calls NVML only while it starts, so the document also has the time from the
plugin's start to its registration.

    python bench/prepare.py [--claims 2000] [--data-dir /tmp] [--cdi-dir /dev/shm]
                            [--nvml-backend fake|real]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain.nvml import fake
from computedomain.proto import dra, kubelet_client
from computedomain_sim import nvmlmock
from computedomain_sim.apiserver import testing

ROOT = Path(__file__).resolve().parents[1]
CRDS = ROOT / "deployments" / "base" / "crds"
NODE = "bench-node"
NAMESPACE = "bench"
DRIVER_NAMESPACE = "nvidia-dra"
CLIQUE = fake.DEFAULT_CLIQUE
TICKS = os.sysconf("SC_CLK_TCK")


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {
        "p50": round(pick(0.50) * 1000, 3),
        "p99": round(pick(0.99) * 1000, 3),
        "mean": round(statistics.fmean(ordered) * 1000, 3),
        "max": round(ordered[-1] * 1000, 3),
    }


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


async def setup(api: Api) -> dict[str, Any]:
    for ns in (NAMESPACE, DRIVER_NAMESPACE):
        await api.create(
            resources.NAMESPACES,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        )
    await api.create(
        resources.NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}
    )
    cd = await api.create(
        resources.COMPUTE_DOMAINS,
        {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.COMPUTE_DOMAIN_KIND,
            "metadata": {"name": "bench", "namespace": NAMESPACE},
            "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "bench-ch"}}},
        },
        NAMESPACE,
    )
    uid = cd["metadata"]["uid"]
    await api.create(
        resources.COMPUTE_DOMAIN_CLIQUES,
        {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.CLIQUE_KIND,
            "metadata": {
                "name": names.clique_object_name(uid, CLIQUE),
                "namespace": DRIVER_NAMESPACE,
                # As a daemon creates it: the plugin watches its own clique by this label.
                "labels": {names.COMPUTE_DOMAIN_LABEL: uid, names.CLIQUE_LABEL: CLIQUE},
            },
            "daemons": [
                {
                    "nodeName": NODE,
                    "ipAddress": "10.0.0.1",
                    "cliqueID": CLIQUE,
                    "index": 0,
                    "status": "Ready",
                }
            ],
        },
        DRIVER_NAMESPACE,
    )
    return cd


async def allocated_claim(api: Api, kind: str, domain_id: str) -> dra.ClaimRef:
    request, device, namespace, config_kind = (
        ("daemon", "daemon-0", DRIVER_NAMESPACE, names.DAEMON_CONFIG_KIND)
        if kind == "daemon"
        else ("channel", "channel-0", NAMESPACE, names.CHANNEL_CONFIG_KIND)
    )
    claim = await api.create(
        resources.RESOURCE_CLAIMS,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"{request}-{uuid.uuid4().hex[:10]}", "namespace": namespace},
            "spec": {
                "devices": {"requests": [{"name": request, "exactly": {"deviceClassName": "x"}}]}
            },
        },
        namespace,
    )
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": request,
                        "driver": names.DRIVER_NAME,
                        "pool": NODE,
                        "device": device,
                    }
                ],
                "config": [
                    {
                        "source": "FromClaim",
                        "requests": [request],
                        "opaque": {
                            "driver": names.DRIVER_NAME,
                            "parameters": {
                                "apiVersion": names.GROUP_VERSION,
                                "kind": config_kind,
                                "domainID": domain_id,
                            },
                        },
                    }
                ],
            }
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": str(uuid.uuid4())}],
    }
    claim = await api.update_status(resources.RESOURCE_CLAIMS, claim)
    return dra.ClaimRef(namespace, claim["metadata"]["uid"], claim["metadata"]["name"])


async def measure(
    client: kubelet_client.DraClient, api: Api, kind: str, domain_id: str, *, count: int, pid: int
) -> dict[str, Any]:
    prepare: list[float] = []
    unprepare: list[float] = []
    cpu_before = cpu_seconds(pid)
    for _ in range(count):
        claim = await allocated_claim(api, kind, domain_id)
        started = time.perf_counter()
        result = await client.prepare([claim])
        prepared = time.perf_counter()
        if result[claim.uid].error:
            raise RuntimeError(result[claim.uid].error)
        errors = await client.unprepare([claim])
        done = time.perf_counter()
        if errors[claim.uid]:
            raise RuntimeError(errors[claim.uid])
        prepare.append(prepared - started)
        unprepare.append(done - prepared)
    cpu = cpu_seconds(pid) - cpu_before
    return {
        "claims": count,
        # The plugin's CPU time (all threads) over the run, per claim prepared and unprepared:
        # steadier than latency on a shared machine (it includes the watch events it handles).
        "plugin_cpu_ms_per_claim": round(cpu / count * 1000, 3),
        "prepare_ms": percentiles(prepare),
        "unprepare_ms": percentiles(unprepare),
        "prepare_plus_unprepare_ms": percentiles(
            [a + b for a, b in zip(prepare, unprepare, strict=True)]
        ),
    }


async def floor(client: kubelet_client.DraClient, api: Api, *, count: int) -> dict[str, float]:
    """What the machine charges for the round trips a prepare makes, with no work in them.

    A channel claim's prepare is one gRPC call to the plugin and two API requests from it (read
    the claim, label the node), its unprepare one call and one request; all run as Python on
    both ends, so their latency follows the machine's speed, which varied by 2x within minutes
    on a shared host. An empty NodePrepareResources (no claims: the plugin answers at once) over
    the same channel, and a GET of the Node from this process, put the claim figures in
    proportion. Measured before and after the claims, to show a change of speed during the run.
    """
    rpc: list[float] = []
    get: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        await client.prepare([])
        answered = time.perf_counter()
        await api.get(resources.NODES, NODE)
        done = time.perf_counter()
        rpc.append(answered - started)
        get.append(done - answered)
    return {
        "empty_rpc_p50_ms": percentiles(rpc)["p50"],
        "api_get_p50_ms": percentiles(get)["p50"],
    }


def _open_log(path: Path) -> Any:
    return path.open("wb")


def nvml_environment(backend: str, root: Path) -> dict[str, str]:
    """The plugin's NVML settings: the fake backend, or the real one on the mock library."""
    if backend == "fake":
        return {"NVML_BACKEND": "fake", "FAKE_NVML_CLIQUE": CLIQUE}
    nvmlmock.install(root / "driver-root", nvmlmock.build())
    profile = nvmlmock.write_profile(root / "nvml-profile.json", "gb200", CLIQUE)
    return {"NVML_BACKEND": "real", "NVML_MOCK_PROFILE": str(profile)}


async def run(
    count: int, root: Path, cdi_root: Path, server: testing.RunningServer, *, backend: str
) -> dict[str, Any]:
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    cd = await setup(api)
    (root / "driver-root/proc/driver/nvidia/capabilities").mkdir(parents=True)
    (root / "driver-root/proc/driver/nvidia/capabilities/fabric-imex-mgmt").write_text(
        fake.fabric_imex_mgmt_text()
    )
    (root / "proc-devices").write_text(fake.proc_devices_text())
    (root / "boot_id").write_text(f"{uuid.uuid4()}\n")
    env = {
        **os.environ,
        "NODE_NAME": NODE,
        "NAMESPACE": DRIVER_NAMESPACE,
        "CDI_ROOT": str(cdi_root),
        "KUBELET_REGISTRAR_DIRECTORY_PATH": str(root / "reg"),
        "KUBELET_PLUGINS_DIRECTORY_PATH": str(root / "p"),
        "ALT_PROC_DEVICES_PATH": str(root / "proc-devices"),
        "DRIVER_ROOT_CTR_PATH": str(root / "driver-root"),
        "BOOT_ID_PATH": str(root / "boot_id"),
        **nvml_environment(backend, root),
        "KUBECONFIG": str(server.kubeconfig),
        "KUBE_API_QPS": "0",
    }
    binary = Path(sys.executable).with_name("cd-kubelet-plugin")
    log = _open_log(root / "plugin.log")
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(str(binary), env=env, stdout=log, stderr=log)
    socket = root / "reg" / f"{names.DRIVER_NAME}-reg.sock"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.returncode is not None:
                raise RuntimeError((root / "plugin.log").read_text()[-2000:])
            try:
                registration = await kubelet_client.register(
                    str(socket), driver_name=names.DRIVER_NAME
                )
                start_to_registered = time.monotonic() - started
                break
            except kubelet_client.KubeletRpcError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
        async with kubelet_client.DraClient.for_registration(registration) as client:
            uid = cd["metadata"]["uid"]
            floor_count = max(1, count // 4)
            before = await floor(client, api, count=floor_count)
            channel = await measure(client, api, "channel", uid, count=count, pid=process.pid)
            daemon = await measure(client, api, "daemon", uid, count=count, pid=process.pid)
            after = await floor(client, api, count=floor_count)
        rss = peak_rss_mb(process.pid)
    finally:
        if process.returncode is None:  # a plugin that exited early has its log in the error
            process.terminate()
        await process.wait()
        log.close()
        await api.close()
    return {
        "benchmark": "kubelet plugin prepare/unprepare through gRPC (v1), one claim per call",
        "nvml_backend": backend,
        "plugin_start_to_registered_ms": round(start_to_registered * 1000, 1),
        "channel_claims_ready_domain": channel,
        "daemon_claims": daemon,
        "plugin_peak_rss_mb": rss,
        "round_trip_floor": {"before": before, "after": after, "samples": floor_count},
        "data_dir": str(root),
        "cdi_root": str(cdi_root),
        "cpus": os.cpu_count(),
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        "targets": {"p50_ms": 3, "p99_ms": 15, "rss_mb": 80},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--data-dir", default="/tmp")
    parser.add_argument("--cdi-dir", default="/dev/shm" if Path("/dev/shm").is_dir() else "/tmp")
    parser.add_argument(
        "--nvml-backend",
        choices=["fake", "real"],
        default="fake",
        help="the plugin's NVML: the fake backend, or the real one on the mock NVML library",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kpb-", dir=args.data_dir))
    cdi_root = Path(tempfile.mkdtemp(prefix="kpb-cdi-", dir=args.cdi_dir))
    try:
        (root / "apiserver").mkdir()
        with testing.running(root / "apiserver") as server:
            server.install_crds([CRDS])
            doc = asyncio.run(run(args.claims, root, cdi_root, server, backend=args.nvml_backend))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(cdi_root, ignore_errors=True)
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
