"""``computedomain sim apiserver``: run the embedded Kubernetes API server in the foreground.

Prints the URL it listens on as the first line of output, writes a kubeconfig with the admin
token, and stops cleanly on SIGTERM or SIGINT (exit code 0). A data directory that cannot be
read is reported with exit code 1.

``--faults SPEC`` injects API faults (:mod:`computedomain_sim.faults.spec` syntax, e.g.
``409=0.05,429=0.02,latency=5ms..50ms,watch-drop=0.01,seed=42``): a bad spec is a usage error
(exit code 2) naming the key; the spec in force, seed included, is printed after the kubeconfig
line, ``/debug/faults`` changes it at run time (admin token), and the counts of injected faults
are printed to stderr as one JSON line when the server stops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from computedomain_sim.apiserver import persistence, status, tls
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.faults import spec as fault_spec
from computedomain_sim.faults.apiserver import ApiFaults

if TYPE_CHECKING:
    from computedomain.cli.main import Commands


def register(commands: Commands) -> None:
    sim = commands.group("sim", "the embedded simulated cluster")
    parser = sim.add("apiserver", "run the embedded Kubernetes API server", run)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=6443, help="port to listen on (0: any free)")
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=Path(".sim/kubeconfig"),
        help="where to write a kubeconfig with the admin token",
    )
    parser.add_argument("--data-dir", type=Path, help="keep objects here across restarts")
    parser.add_argument("--rbac", action="store_true", help="enforce RBAC on every request")
    parser.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS (self-signed; kubectl sends tokens only over TLS, so use it with --rbac)",
    )
    parser.add_argument(
        "--crds", type=Path, nargs="*", default=[], help="CRD YAML files or directories to install"
    )
    parser.add_argument("--log-level", default="WARNING", help="Python log level")
    parser.add_argument(
        "--faults",
        type=_faults,
        default=None,
        metavar="SPEC",
        help="inject API faults, e.g. 409=0.05,429=0.02,latency=5ms..50ms,watch-drop=0.01,"
        "seed=42 (keys: 409 429 500 503 504 latency latency-rate watch-drop watch-expire "
        "watch-after retry-after verbs resources namespaces users agents seed; rules split "
        "by ';'); changeable at run time with PUT /debug/faults (admin token)",
    )


def _faults(text: str) -> fault_spec.FaultSpec:
    try:
        return fault_spec.parse(text)
    except fault_spec.SpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def serve(args: argparse.Namespace) -> int:
    faults = ApiFaults(args.faults) if args.faults is not None else None
    server = EmbeddedApiServer(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        rbac=args.rbac,
        tls=args.tls,
        stages=[faults] if faults is not None else [],
    )
    try:
        await server.start()
    except (persistence.CorruptStoreError, tls.TlsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        if args.crds:
            await server.install_crds(args.crds)
        path = server.write_kubeconfig(args.kubeconfig)  # ready before the URL line appears
        # The handlers go in before the URL line: whoever reads it may signal at once.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(server.url, flush=True)
        print(f"kubeconfig: {path}", flush=True)
        if faults is not None:
            print(f"faults: {fault_spec.render(faults.spec)}", flush=True)
        await stop.wait()
    except status.ApiStatusError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    finally:
        await server.stop()
        if faults is not None:
            print(f"faults injected: {json.dumps(faults.report())}", file=sys.stderr, flush=True)
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(serve(args))
    return 0
