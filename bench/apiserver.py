"""Benchmark of the embedded API server; prints one JSON document.

The server runs in its own process (``computedomain sim apiserver`` with the CRDs of
``deployments/``); the load comes from this process (official client, threads) and, for the
watch fan-out, from separate watcher processes (raw aiohttp streams, so that client-side
decoding does not bound the figure).

Measured:
* creates/s, gets/s, updates/s (PUT of the whole object, an annotation changed) and patches/s
  (a JSON merge patch of an annotation) of ComputeDomains through ``CustomObjectsApi`` with 1
  and 8 threads, with the CPU time the server and the client process spent per request (the
  throughput on a small, shared machine is bounded by their sum); updates and patches are the
  ordinary writes every component makes, which field ownership (managedFields) must not make
  slower;
* watch fan-out: 1 writer, N watchers: events delivered per second (all watchers together),
  p50/p99 delivery latency (write request sent → event line received) and the server's CPU
  time per delivered event;
* memory: the server's RSS growth per stored ComputeDomain over 10k objects, and that growth
  minus the object's JSON size.

Usage: ``python bench/apiserver.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from computedomain_sim.apiserver import testing

REPO = Path(__file__).resolve().parents[1]
GROUP, VERSION, PLURAL = "resource.nvidia.com", "v1beta1", "computedomains"


def computedomain(name: str, note: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if note:
        meta["annotations"] = {"bench/t": note}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ComputeDomain",
        "metadata": meta,
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": f"{name}-rct"}}},
    }


def api(url: str, token: str) -> Any:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = url
    cfg.api_key = {"authorization": f"Bearer {token}"}
    return client.CustomObjectsApi(client.ApiClient(cfg))


def create_namespace(url: str, token: str, name: str) -> None:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = url
    cfg.api_key = {"authorization": f"Bearer {token}"}
    client.CoreV1Api(client.ApiClient(cfg)).create_namespace({"metadata": {"name": name}})


def load(
    url: str, token: str, pid: int, *, threads: int, per_thread: int, ns: str
) -> dict[str, float]:
    """creates/s, gets/s, updates/s and patches/s with ``threads`` client threads."""
    create_namespace(url, token, ns)
    clients = [api(url, token) for _ in range(threads)]
    barrier = threading.Barrier(threads + 1)

    def run(i: int, verb: str) -> None:
        co = clients[i]
        barrier.wait()
        for j in range(per_thread):
            name = f"cd-{i}-{j}"
            if verb == "create":
                co.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, computedomain(name))
            elif verb == "get":
                co.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
            elif verb == "update":
                co.replace_namespaced_custom_object(
                    GROUP, VERSION, ns, PLURAL, name, computedomain(name, note=f"u{j}")
                )
            else:
                co.patch_namespaced_custom_object(
                    GROUP, VERSION, ns, PLURAL, name, {"metadata": {"annotations": {"p": str(j)}}}
                )

    out = {}
    for verb in ("create", "get", "update", "patch"):
        ts = [threading.Thread(target=run, args=(i, verb)) for i in range(threads)]
        for t in ts:
            t.start()
        barrier.wait()
        start, cpu0, own0 = time.perf_counter(), _cpu(pid), _cpu(os.getpid())
        for t in ts:
            t.join()
        n = threads * per_thread
        out[f"{verb}s_per_s"] = round(n / (time.perf_counter() - start), 1)
        out[f"server_cpu_ms_per_{verb}"] = round((_cpu(pid) - cpu0) / n * 1000, 3)
        out[f"client_cpu_ms_per_{verb}"] = round((_cpu(os.getpid()) - own0) / n * 1000, 3)
    return out


def memory(url: str, token: str, pid: int, count: int) -> dict[str, float]:
    """RSS growth of the server per stored ComputeDomain."""
    ns = "bench-mem"
    create_namespace(url, token, ns)
    proc = psutil.Process(pid)
    co = api(url, token)
    co.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, computedomain("warm"))
    before = proc.memory_info().rss
    per = count // 4

    def run(i: int) -> None:
        c = api(url, token)
        for j in range(per):
            c.create_namespaced_custom_object(
                GROUP, VERSION, ns, PLURAL, computedomain(f"m-{i}-{j:05d}")
            )

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    after = proc.memory_info().rss
    sample = co.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "m-0-00000")
    json_size = len(json.dumps(sample, separators=(",", ":")))
    per_object = (after - before) / (per * 4)
    return {
        "objects": per * 4,
        "rss_growth_bytes_per_object": round(per_object),
        "json_bytes_per_object": json_size,
        "overhead_bytes_per_object": round(per_object - json_size),
    }


async def _watchers(url: str, token: str, ns: str, count: int, duration: float) -> None:
    import aiohttp

    latencies: list[float] = []
    received = 0
    ready = 0
    marker = b'"bench/t":"'

    async def one(session: aiohttp.ClientSession) -> None:
        nonlocal received, ready
        params = {"watch": "1", "resourceVersion": "", "timeoutSeconds": str(int(duration) + 30)}
        path = f"{url}/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}"
        async with session.get(
            path, params=params, timeout=aiohttp.ClientTimeout(total=None)
        ) as resp:
            ready += 1
            buf = b""
            while True:
                chunk = await resp.content.readany()
                if not chunk:
                    return
                now = time.time()
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    received += 1
                    i = line.find(marker)
                    if i >= 0:
                        j = line.index(b'"', i + len(marker))
                        latencies.append(now - float(line[i + len(marker) : j]))

    headers = {"Authorization": f"Bearer {token}"}
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(headers=headers, connector=conn) as session:
        tasks = [asyncio.create_task(one(session)) for _ in range(count)]
        while ready < count:  # noqa: ASYNC110 - polling a counter many tasks bump
            await asyncio.sleep(0.05)
        print("ready", flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        assert line.strip() == "go"
        start = time.time()
        base_received = received
        base_lat = len(latencies)
        await asyncio.sleep(duration)
        total = received - base_received
        lat = latencies[base_lat:]
        for t in tasks:
            t.cancel()
    print(json.dumps({"received": total, "seconds": time.time() - start, "latencies": lat}))


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def fanout(
    url: str, token: str, pid: int, *, watchers: int, procs: int, duration: float
) -> dict[str, Any]:
    ns = "bench-watch"
    create_namespace(url, token, ns)
    co = api(url, token)
    co.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, computedomain("w"))
    children = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--watcher",
                url,
                token,
                ns,
                str(watchers // procs),
                str(duration),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(procs)
    ]
    for c in children:
        assert c.stdout is not None
        assert c.stdout.readline().strip() == "ready"
    for c in children:
        assert c.stdin is not None
        c.stdin.write("go\n")
        c.stdin.flush()
    # The writer uses a bare HTTP connection: the official client's own CPU cost would bound
    # the write rate on a small machine long before the server's fan-out does.
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port))
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}/w"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/merge-patch+json"}
    writes = 0
    cpu0 = _cpu(pid)
    deadline = time.time() + duration
    while time.time() < deadline:
        note = repr(time.time())
        body = json.dumps({"metadata": {"annotations": {"bench/t": note}}}).encode()
        conn.request("PATCH", path, body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        writes += 1
    cpu = _cpu(pid) - cpu0
    results = [json.loads(c.communicate(timeout=120)[0].strip().splitlines()[-1]) for c in children]
    received = sum(r["received"] for r in results)
    seconds = max(r["seconds"] for r in results)
    lat = sorted(x for r in results for x in r["latencies"])
    return {
        "watchers": watchers,
        "writes_per_s": round(writes / duration, 1),
        "events_delivered_per_s": round(received / seconds, 1),
        "server_cpu_us_per_delivered_event": round(cpu / max(received, 1) * 1e6, 1),
        "p50_latency_ms": round(statistics.median(lat) * 1000, 2) if lat else None,
        "p99_latency_ms": round(lat[int(len(lat) * 0.99) - 1] * 1000, 2) if lat else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--watcher", nargs=5)
    args = parser.parse_args()
    if args.watcher:
        url, token, ns, count, duration = args.watcher
        asyncio.run(_watchers(url, token, ns, int(count), float(duration)))
        return 0
    scale = 0.2 if args.quick else 1.0
    with (
        tempfile.TemporaryDirectory() as tmp,
        testing.spawned(Path(tmp), "--crds", str(REPO / "deployments" / "base" / "crds")) as srv,
    ):
        pid, url, token = srv.process.pid, srv.url, srv.token
        result = {
            "machine": {
                "cpus": os.cpu_count(),
                "python": sys.version.split()[0],
                "load_average_1m_at_start": os.getloadavg()[0],
            },
            "crud_1_thread": load(
                url, token, pid, threads=1, per_thread=int(1500 * scale), ns="bench-1"
            ),
            "crud_8_threads": load(
                url, token, pid, threads=8, per_thread=int(400 * scale), ns="bench-8"
            ),
            "watch_fanout": fanout(url, token, pid, watchers=200, procs=2, duration=10.0 * scale),
            "memory": memory(url, token, pid, int(10_000 * scale)),
        }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
