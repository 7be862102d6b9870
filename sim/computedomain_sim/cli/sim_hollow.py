"""``computedomain sim hollow``: run many hollow nodes against an API server until interrupted.

Registered by :mod:`computedomain.cli.main` in the ``sim`` group; runs
:class:`computedomain_sim.hollow.cluster.HollowCluster` (the kubelet plugin and daemon logic of
``--racks`` x ``--nodes-per-rack`` nodes in this process, with the simulation's scheduler and
controllers) against the API server of ``--kubeconfig`` (e.g. one started by ``computedomain sim
apiserver``); with ``--install`` it first installs ``deployments/`` without its two workloads.
The ComputeDomain controller is run separately (``cd-controller`` with the same kubeconfig),
as ``bench/scale.py`` does. Prints ``ready <N> nodes`` once every node serves; SIGINT or
SIGTERM stops it (exit 0); a failure to start exits 1 with ``Error: ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from computedomain.kube.client import ClientConfig, connect

if TYPE_CHECKING:
    from computedomain.cli.main import Commands


def register(commands: Commands) -> None:
    sim = commands.group("sim", "the embedded simulated cluster")
    parser = sim.add("hollow", "run many hollow nodes against an API server", run)
    parser.add_argument("--kubeconfig", required=True, help="the API server's kubeconfig")
    parser.add_argument("--racks", type=int, default=2, help="racks (NVLink cliques)")
    parser.add_argument("--nodes-per-rack", type=int, default=18, help="nodes in each rack")
    parser.add_argument("--namespace", default="computedomain-system", help="driver namespace")
    parser.add_argument(
        "--files-dir",
        type=Path,
        default=None,
        help="where the nodes' files go (default: /dev/shm if present, else the temp dir; "
        "a short path: socket paths must fit 107 bytes)",
    )
    parser.add_argument("--install", action="store_true", help="install deployments/ first")


async def _run(args: argparse.Namespace) -> int:
    from computedomain_sim.hollow import manifests  # noqa: PLC0415 (heavy imports, sim only)
    from computedomain_sim.hollow.cluster import HollowCluster, HollowConfig  # noqa: PLC0415

    found = manifests.load()
    client = ClientConfig(kubeconfig=args.kubeconfig)
    if args.install:
        api = await connect(attrs.evolve(client, qps=0))
        try:
            await manifests.install_manifests(api, found.objects)
        finally:
            await api.close()
    state = Path(tempfile.mkdtemp(prefix="hl-", dir=args.files_dir))
    hollow = HollowCluster(
        HollowConfig(
            client=client,
            state_dir=state,
            racks=args.racks,
            nodes_per_rack=args.nodes_per_rack,
            namespace=args.namespace,
            plugin_env=found.plugin_env,
        )
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await hollow.start()
    try:
        print(f"ready {len(hollow.kubelets)} nodes", flush=True)
        await stop.wait()
    finally:
        await hollow.stop()
    return 0


def run(args: argparse.Namespace) -> int:
    """Run until SIGINT/SIGTERM; 0 then, 1 with ``Error: ...`` when it cannot start."""
    if args.files_dir is None:
        shm = Path("/dev/shm")
        args.files_dir = shm if shm.is_dir() else Path(tempfile.gettempdir())
    try:
        return asyncio.run(_run(args))
    except (OSError, ValueError, RuntimeError, TimeoutError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
