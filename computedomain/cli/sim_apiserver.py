"""``computedomain sim apiserver``: run the embedded Kubernetes API server in the foreground.

Prints the URL it listens on as the first line of output, writes a kubeconfig with the admin
token, and stops cleanly on SIGTERM or SIGINT (exit code 0). A data directory that cannot be
read is reported with exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from computedomain.sim.apiserver import persistence, status, tls
from computedomain.sim.apiserver.server import EmbeddedApiServer

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


async def serve(args: argparse.Namespace) -> int:
    server = EmbeddedApiServer(
        host=args.host, port=args.port, data_dir=args.data_dir, rbac=args.rbac, tls=args.tls
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
        print(server.url, flush=True)
        print(f"kubeconfig: {path}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    except status.ApiStatusError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    finally:
        await server.stop()
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(serve(args))
    return 0
