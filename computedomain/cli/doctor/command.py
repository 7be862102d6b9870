"""``computedomain doctor [--kubeconfig K] [-n NS] [-o text|json] [DOMAIN]``.

Registers the sub-command with :mod:`computedomain.cli.main` and wires the parts: connect with
the official client (:func:`computedomain.kube.client.connect`), :func:`~.gathering.gather`,
:func:`~.diagnosis.examine`, :mod:`~.report`. Exit codes: 0 when every examined domain is
Ready with no problem, 1 when anything is not, 2 for usage errors, a missing domain, or a
cluster that cannot be read (connection, credentials, permissions, CRD not installed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from computedomain.cli.doctor import diagnosis, gathering, report
from computedomain.kube.client import ClientConfig, ClientConfigError, connect

if TYPE_CHECKING:
    from computedomain.cli.main import Commands

EXIT_OK: Final = 0
EXIT_PROBLEMS: Final = 1
EXIT_ERROR: Final = 2
DEFAULT_KUBECONFIG: Final = Path("~/.kube/config")


def register(commands: Commands) -> None:
    parser = commands.add("doctor", "explain why ComputeDomains are not Ready", run)
    parser.add_argument(
        "domain", nargs="?", metavar="DOMAIN", help="the ComputeDomain to examine (default: all)"
    )
    parser.add_argument(
        "-n",
        "--namespace",
        help="examine the domains of this namespace (default: all namespaces; 'default' "
        "when DOMAIN is given)",
    )
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)",
    )
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="output format"
    )
    parser.add_argument(
        "--request-timeout", type=float, default=30.0, help="seconds per API request"
    )


def kubeconfig_path(flag: str | None, environ: dict[str, str] | os._Environ[str]) -> str | None:
    """The kubeconfig to use: the flag, else the first file of ``$KUBECONFIG``, else
    ``~/.kube/config`` when it exists, else None (in-cluster)."""
    if flag:
        return flag
    for part in environ.get("KUBECONFIG", "").split(os.pathsep):
        if part:
            return part
    default = DEFAULT_KUBECONFIG.expanduser()
    return str(default) if default.is_file() else None


async def diagnose_cluster(
    config: ClientConfig, scope: gathering.Scope
) -> list[report.DomainReport]:
    """Connect, read, diagnose. Raises ClientConfigError and GatherError."""
    api = await connect(config)
    try:
        snapshot = await gathering.gather(api, scope)
    finally:
        await api.close()
    return report.build(diagnosis.examine(snapshot))


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the doctor; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    config = ClientConfig(
        kubeconfig=kubeconfig_path(args.kubeconfig, os.environ),
        context=args.context,
        qps=0,  # a handful of list requests: no client-side limit
        user_agent="computedomain-doctor",
        timeout_seconds=args.request_timeout,
    )
    scope = gathering.Scope(namespace=args.namespace, name=args.domain)
    try:
        reports = asyncio.run(diagnose_cluster(config, scope))
    except (ClientConfigError, gathering.GatherError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_ERROR
    if args.output == "json":
        out.write(report.render_json(reports))
    else:
        out.write(report.render_text(reports))
    return EXIT_OK if all(r.ok for r in reports) else EXIT_PROBLEMS
