"""``computedomain sim run|status``: host a simulated cluster in the foreground, and show one.

``run`` is what ``sim up`` (:mod:`computedomain_sim.cli.sim_cluster`) starts in the background; it
takes the same flags. ``status`` prints nodes, components and ComputeDomains through the API.
Both need the simulation or the Kubernetes client, so they live apart from ``up`` and ``down``,
which must start quickly. The work is in :mod:`computedomain_sim.cluster.hosting` and
:mod:`computedomain_sim.cluster.report`; this module only parses and wires.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from computedomain.kube.client import ClientConfig, connect
from computedomain.runtime import logs
from computedomain_sim import nvmlmock
from computedomain_sim.cli.sim_cluster import DEFAULT_STATE, add_cluster_arguments
from computedomain_sim.cluster import hosting, report, service
from computedomain_sim.cluster.cluster import ClusterConfig, ControlPlane, HostImexState
from computedomain_sim.cluster.layout import StateLayout
from computedomain_sim.cluster.topology import Topology
from computedomain_sim.imex import wrappers
from computedomain_sim.kubelet.launch import Isolation

if TYPE_CHECKING:
    from computedomain.cli.main import Commands


def register(commands: Commands) -> None:
    sim = commands.group("sim", "the embedded simulated cluster")
    run = sim.add("run", "run a simulated cluster in the foreground (what 'up' starts)", run_run)
    add_cluster_arguments(run)
    status = sim.add("status", "show the nodes, components and ComputeDomains", run_status)
    status.add_argument("--state-dir", type=Path, default=DEFAULT_STATE)


def cluster_config(args: argparse.Namespace) -> ClusterConfig:
    """The cluster ``sim run`` hosts. Without ``--imex-path`` the daemons run the IMEX
    stand-ins (their wrapper directory is created); with ``--nvml-backend real`` the mock NVML
    library is built first. Raises ValueError for a bad topology or flags the control plane
    cannot honour, MockBuildError."""
    backend = nvmlmock.NvmlBackend(args.nvml_backend)
    if backend is nvmlmock.NvmlBackend.REAL:
        nvmlmock.build()
    config = ClusterConfig(
        state_dir=args.state_dir,
        topology=Topology(
            args.racks,
            args.nodes_per_rack,
            args.profile,
            seed=str(args.state_dir.resolve()),
            nvml_backend=backend,
        ),
        manifests=args.manifests,
        imex_path=args.imex_path or str(wrappers.ensure()),
        isolation=Isolation(args.isolation) if args.isolation else None,
        host_imex=HostImexState(args.host_imex) if args.host_imex else None,
        port=args.port,
        tls=args.tls,
        rbac_usage=args.rbac_usage,
        control_plane=ControlPlane(args.control_plane),
    )
    config.check()
    return config


def run_run(args: argparse.Namespace) -> int:
    logs.setup(0, "sim")
    try:
        config = cluster_config(args)
    except (ValueError, nvmlmock.MockBuildError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(
            hosting.run(config, wait_components=args.wait_components, within=args.timeout)
        )
    return 0


def run_status(args: argparse.Namespace) -> int:
    layout = StateLayout(args.state_dir)
    state = service.read_state(layout)
    if state is None:
        print(f"no simulated cluster in {layout.root}", file=sys.stderr)
        return 1

    async def gather() -> dict[str, list[dict[str, object]]]:
        api = await connect(ClientConfig(kubeconfig=str(layout.kubeconfig)))
        try:
            return await report.gather(api)
        finally:
            await api.close()

    try:
        seen = asyncio.run(gather())
    except Exception as exc:  # an unreachable or broken cluster is reported, not raised
        print(f"cluster: {state.get('phase')} (pid {state.get('pid')}); API not reachable: {exc}")
        return 1
    print(report.render(state, seen), end="")
    return 0
