"""``computedomain sim up|run|status|down``: a simulated cluster in the background.

``up`` starts ``sim run`` detached, returns once the cluster is ready and prints the kubeconfig
path; ``status`` prints nodes, components and ComputeDomains; ``down`` stops every process and
removes the state directory. Everything lives under ``--state-dir`` (default ``.sim``). The work
is in :mod:`computedomain.sim.cluster.service`; this module only parses and wires.
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
from computedomain.sim.cluster import report, service
from computedomain.sim.cluster.cluster import DEFAULT_MANIFESTS, ClusterConfig
from computedomain.sim.cluster.layout import StateLayout
from computedomain.sim.cluster.topology import Topology
from computedomain.sim.imex import wrappers
from computedomain.sim.kubelet.launch import Isolation

if TYPE_CHECKING:
    from computedomain.cli.main import Commands

DEFAULT_STATE = Path(".sim")


def register(commands: Commands) -> None:
    sim = commands.group("sim", "the embedded simulated cluster")
    up = sim.add(
        "up", "start a simulated cluster in the background and wait until it is ready", run_up
    )
    run = sim.add("run", "run a simulated cluster in the foreground (what 'up' starts)", run_run)
    for parser in (up, run):
        parser.add_argument(
            "--state-dir", type=Path, default=DEFAULT_STATE, help="state, logs and kubeconfig"
        )
        parser.add_argument("--racks", type=int, default=2, help="racks (NVLink cliques)")
        parser.add_argument("--nodes-per-rack", type=int, default=2, help="nodes in each rack")
        parser.add_argument(
            "--profile", default="gb200", help="fake NVML hardware profile of every node"
        )
        parser.add_argument(
            "--manifests", type=Path, default=DEFAULT_MANIFESTS, help="kustomization to install"
        )
        parser.add_argument(
            "--imex-path",
            help="directory with nvidia-imex and nvidia-imex-ctl, put first on the daemons' PATH "
            "(default: the simulation's stand-ins, see 'computedomain sim imex-path')",
        )
        parser.add_argument(
            "--isolation",
            choices=[m.value for m in Isolation],
            help="container isolation (default: detect)",
        )
        parser.add_argument(
            "--port", type=int, default=0, help="API server port (0: any free port)"
        )
        parser.add_argument(
            "--no-tls",
            dest="tls",
            action="store_false",
            help="serve plain HTTP (kubectl then refuses the kubeconfig's token; the default "
            "is HTTPS with a generated CA written into the kubeconfig)",
        )
        parser.add_argument(
            "--no-wait-components",
            dest="wait_components",
            action="store_false",
            help="ready once the nodes are, without waiting for the controller and plugin pods",
        )
        parser.add_argument(
            "--timeout", type=float, default=300.0, help="seconds to wait for ready"
        )
        parser.add_argument(
            "--rbac-usage",
            type=Path,
            help="append to this file, as JSON lines, which RBAC rule allowed (or that none "
            "allowed) each request of a non-admin user",
        )
    status = sim.add("status", "show the nodes, components and ComputeDomains", run_status)
    status.add_argument("--state-dir", type=Path, default=DEFAULT_STATE)
    down = sim.add("down", "stop the simulated cluster and remove its state", run_down)
    down.add_argument("--state-dir", type=Path, default=DEFAULT_STATE)
    down.add_argument("--keep-logs", action="store_true", help="keep logs/cluster.log")


def _run_args(args: argparse.Namespace) -> list[str]:
    out = [
        f"--state-dir={args.state_dir}",
        f"--racks={args.racks}",
        f"--nodes-per-rack={args.nodes_per_rack}",
        f"--profile={args.profile}",
        f"--manifests={args.manifests}",
        f"--port={args.port}",
        f"--timeout={args.timeout}",
    ]
    if args.imex_path:
        out.append(f"--imex-path={args.imex_path}")
    if args.isolation:
        out.append(f"--isolation={args.isolation}")
    if not args.wait_components:
        out.append("--no-wait-components")
    if not args.tls:
        out.append("--no-tls")
    if args.rbac_usage:
        out.append(f"--rbac-usage={args.rbac_usage.resolve()}")
    return out


def run_up(args: argparse.Namespace) -> int:
    layout = StateLayout(args.state_dir)
    try:
        state = service.up(layout, _run_args(args), within=args.timeout + 30)
    except (service.ClusterFailed, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(state["kubeconfig"])
    return 0


def cluster_config(args: argparse.Namespace) -> ClusterConfig:
    """The cluster ``sim run`` hosts. Without ``--imex-path`` the daemons run the IMEX
    stand-ins (their wrapper directory is created). Raises ValueError for a bad topology."""
    return ClusterConfig(
        state_dir=args.state_dir,
        topology=Topology(
            args.racks, args.nodes_per_rack, args.profile, seed=str(args.state_dir.resolve())
        ),
        manifests=args.manifests,
        imex_path=args.imex_path or str(wrappers.ensure()),
        isolation=Isolation(args.isolation) if args.isolation else None,
        port=args.port,
        tls=args.tls,
        rbac_usage=args.rbac_usage,
    )


def run_run(args: argparse.Namespace) -> int:
    logs.setup(0, "sim")
    try:
        config = cluster_config(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(
            service.run(config, wait_components=args.wait_components, within=args.timeout)
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


def run_down(args: argparse.Namespace) -> int:
    killed = service.down(StateLayout(args.state_dir), keep_logs=args.keep_logs)
    if killed:
        print(f"killed leftover container process groups: {' '.join(map(str, killed))}")
    return 0
