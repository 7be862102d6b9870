"""``computedomain sim up|down``: a simulated cluster in the background.

``up`` starts ``sim run`` detached (:mod:`computedomain_sim.cli.sim_host`), returns once the cluster
is ready and prints the kubeconfig path; ``down`` stops every process and removes the state
directory. Everything lives under ``--state-dir`` (default ``.sim``). The work is in
:mod:`computedomain_sim.cluster.service`; this module only parses and wires. It imports nothing
of the simulation itself: the tests and the demo run ``up`` and ``down`` for every cluster.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from computedomain_sim.cluster import service
from computedomain_sim.cluster.defaults import DEFAULT_MANIFESTS, ControlPlane
from computedomain_sim.cluster.layout import StateLayout
from computedomain_sim.kubelet.launch import Isolation

if TYPE_CHECKING:
    from computedomain.cli.main import Commands

DEFAULT_STATE = Path(".sim")
NO_MANIFESTS = "none"


def register(commands: Commands) -> None:
    sim = commands.group("sim", "the embedded simulated cluster")
    up = sim.add(
        "up", "start a simulated cluster in the background and wait until it is ready", run_up
    )
    add_cluster_arguments(up)
    down = sim.add("down", "stop the simulated cluster and remove its state", run_down)
    down.add_argument("--state-dir", type=Path, default=DEFAULT_STATE)
    down.add_argument("--keep-logs", action="store_true", help="keep logs/cluster.log")


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags ``sim up`` takes and passes on to ``sim run`` (:func:`run_arguments`)."""
    parser.add_argument(
        "--state-dir", type=Path, default=DEFAULT_STATE, help="state, logs and kubeconfig"
    )
    parser.add_argument("--racks", type=int, default=2, help="racks (NVLink cliques)")
    parser.add_argument("--nodes-per-rack", type=int, default=2, help="nodes in each rack")
    parser.add_argument("--profile", default="gb200", help="NVML hardware profile of every node")
    add_nvml_backend_argument(parser)
    parser.add_argument(
        "--manifests",
        type=manifests_argument,
        default=DEFAULT_MANIFESTS,
        help="kustomization to install; 'none' installs nothing of ours (then install with "
        "helm, see deployments/helm), and ./none names a directory called none",
    )
    parser.add_argument(
        "--imex-path",
        help="directory with nvidia-imex and nvidia-imex-ctl, put first on the daemons' PATH "
        "(default: the simulation's stand-ins, see 'computedomain sim imex-path')",
    )
    parser.add_argument(
        "--host-imex",
        choices=["ready", "not-ready"],
        help="run a host nvidia-imex stand-in on every node, ready or held back (for "
        "host-managed IMEX: install with the host-managed-imex component; a node's daemon "
        "gets ready when its /var/lib/cd-sim/host-imex-not-ready goes)",
    )
    parser.add_argument(
        "--isolation",
        choices=[m.value for m in Isolation],
        help="container isolation (default: detect)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        help="API server port (0: any free port, 6443 on the kube control plane)",
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
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for ready")
    add_control_plane_argument(parser)
    parser.add_argument(
        "--rbac-usage",
        type=Path,
        help="append to this file, as JSON lines, which RBAC rule allowed (or that none "
        "allowed) each request of a non-admin user; with --control-plane kube, kube-apiserver's "
        "audit log of the service accounts' requests, with the authorizer's decisions",
    )


def manifests_argument(text: str) -> Path | None:
    """``--manifests``: a kustomization directory, or None for ``none``."""
    return None if text == NO_MANIFESTS else Path(text)


def add_nvml_backend_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nvml-backend",
        choices=["fake", "real"],
        default="fake",
        help="the NVML of every node's plugin: the fake backend, or the real backend (pynvml) "
        "on the mock NVML library, built with 'make nvml-mock' (docs/nvml-mock.md)",
    )


def add_control_plane_argument(parser: argparse.ArgumentParser) -> None:
    """``--control-plane``: the simulation's own API server, scheduler and controllers, or
    Kubernetes' (built by ``make kube-bins``)."""
    parser.add_argument(
        "--control-plane",
        choices=[c.value for c in ControlPlane],
        default=ControlPlane.EMBEDDED.value,
        help="embedded: the simulation's API server, scheduler and controllers; kube: etcd, "
        "kube-apiserver, kube-scheduler and kube-controller-manager (make kube-bins)",
    )


def run_arguments(args: argparse.Namespace) -> list[str]:
    """The ``sim run`` arguments for ``sim up``'s parsed flags."""
    out = [
        f"--state-dir={args.state_dir}",
        f"--racks={args.racks}",
        f"--nodes-per-rack={args.nodes_per_rack}",
        f"--profile={args.profile}",
        f"--nvml-backend={args.nvml_backend}",
        f"--manifests={NO_MANIFESTS if args.manifests is None else args.manifests.absolute()}",
        f"--port={args.port}",
        f"--timeout={args.timeout}",
        f"--control-plane={args.control_plane}",
    ]
    if args.imex_path:
        out.append(f"--imex-path={args.imex_path}")
    if args.isolation:
        out.append(f"--isolation={args.isolation}")
    if args.host_imex:
        out.append(f"--host-imex={args.host_imex}")
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
        state = service.up(layout, run_arguments(args), within=args.timeout + 30)
    except (service.ClusterFailed, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(state["kubeconfig"])
    return 0


def run_down(args: argparse.Namespace) -> int:
    killed = service.down(StateLayout(args.state_dir), keep_logs=args.keep_logs)
    if killed:
        print(f"killed leftover container process groups: {' '.join(map(str, killed))}")
    return 0
