"""``computedomain demo`` (what ``make demo`` runs): two simulated racks, the driver of
``deployments/``, a ComputeDomain and workers on every node, live progress, a summary, teardown.

Wiring only: parses the flags, starts the cluster with ``computedomain sim up``'s machinery
(:func:`computedomain_sim.cluster.service.up`, in the background, HTTPS so kubectl works),
runs :func:`.session.run` and always tears the cluster down
(:func:`computedomain_sim.cluster.service.down`), also on SIGINT/SIGTERM and on failure.
Exit codes: 0 done, 1 not reached in time or the cluster failed, 2 bad flags, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from computedomain_sim.cli import sim_cluster
from computedomain_sim.cluster import service
from computedomain_sim.cluster.layout import StateLayout

from . import session, workload

if TYPE_CHECKING:
    from computedomain.cli.main import Commands

__all__ = ["register", "run_demo"]

DEFAULT_TIMEOUT = 240.0


def register(commands: Commands) -> None:
    demo = commands.add(
        "demo",
        "bring up two simulated racks, run a ComputeDomain with workers across them, "
        "show progress and a summary, tear down",
        run_demo,
    )
    demo.add_argument("--racks", type=int, default=2, help="racks (NVLink cliques)")
    demo.add_argument("--nodes-per-rack", type=int, default=2, help="nodes in each rack")
    demo.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="state, logs and kubeconfig of the cluster (default: a new temporary directory)",
    )
    demo.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds for the whole demo to reach a Ready domain with every worker running",
    )
    sim_cluster.add_nvml_backend_argument(demo)
    demo.add_argument(
        "--keep-running",
        action="store_true",
        help="after the summary, leave the cluster up for kubectl until Ctrl-C or SIGTERM",
    )
    sim_cluster.add_control_plane_argument(demo)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run_demo(args: argparse.Namespace) -> int:
    if args.racks < 1 or args.nodes_per_rack < 1 or args.timeout <= 0:
        print("error: --racks, --nodes-per-rack and --timeout must be positive", file=sys.stderr)
        return 2
    started = time.monotonic()
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="computedomain-demo-"))
    layout = StateLayout(state_dir)
    nodes = args.racks * args.nodes_per_rack
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        print(
            f"starting a simulated cluster: {args.racks} racks x {args.nodes_per_rack} nodes "
            f"(state in {layout.root})",
            flush=True,
        )
        service.up(layout, _run_args(args, layout), within=args.timeout)
        print(
            f"nodes ready after {time.monotonic() - started:.1f}s (the driver is starting); "
            "while the demo runs, try:\n"
            f"  kubectl --kubeconfig {layout.kubeconfig} get computedomains,pods -A\n",
            flush=True,
        )
        return asyncio.run(
            session.run(
                session.Session(
                    layout=layout,
                    workload=workload.Workload(workers=nodes),
                    deadline=started + args.timeout,
                    keep_running=args.keep_running,
                    out=sys.stdout,
                )
            )
        )
    except session.NotReached as exc:
        print(f"\nerror: not reached within {args.timeout:g}s: {exc}", file=sys.stderr)
        return 1
    except (service.ClusterFailed, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        print("tearing down the simulated cluster", flush=True)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not stop the teardown
        service.down(layout)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, previous)
        print(f"done in {time.monotonic() - started:.1f}s", flush=True)


def _run_args(args: argparse.Namespace, layout: StateLayout) -> list[str]:
    """The ``sim run`` flags of the demo's cluster: HTTPS (the default), and ready once the
    nodes are, so the driver's start overlaps the workload's (the progress table shows both)."""
    return [
        f"--state-dir={layout.root}",
        f"--racks={args.racks}",
        f"--nodes-per-rack={args.nodes_per_rack}",
        f"--timeout={args.timeout}",
        f"--nvml-backend={args.nvml_backend}",
        "--no-wait-components",
        f"--control-plane={args.control_plane}",
    ]
