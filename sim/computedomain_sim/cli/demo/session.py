"""The demo's run against a simulated cluster that is already up: create the workload, show
progress until the domain is Ready and every worker has reported its channel devices, print
the summary and, with ``keep_running``, wait for SIGINT/SIGTERM.

Called by :mod:`.command` inside ``asyncio.run`` (the cluster's start and teardown are the
command's). Uses :mod:`.workload` (objects), :mod:`.progress` (table) and :mod:`.summary`.
Raises :class:`NotReached` naming what was missing when the deadline passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from typing import Any, TextIO

import attrs

from computedomain.kube import errors
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.resources import COMPUTE_DOMAINS, DEPLOYMENTS, NAMESPACES, Resource
from computedomain.kube.rest import Api
from computedomain_sim.cluster.layout import StateLayout

from . import progress, summary, workload

__all__ = ["NotReached", "Session", "run"]

POLL_SECONDS = 0.5


class NotReached(TimeoutError):
    """The deadline passed first; the message names what was not reached."""


@attrs.frozen
class Session:
    layout: StateLayout
    workload: workload.Workload
    deadline: float  # time.monotonic() value
    keep_running: bool
    out: TextIO
    clock: Callable[[], float] = time.monotonic


async def run(session: Session) -> int:
    """Create the workload, wait for it, print the summary (and wait for a signal with
    ``keep_running``). Returns 0; raises :class:`NotReached` or API errors."""
    api = await connect(ClientConfig(kubeconfig=str(session.layout.kubeconfig), qps=0))
    try:
        done = await _drive(api, session)
        for line in summary.render(done):
            print(line, file=session.out)
        session.out.flush()
    finally:
        await api.close()
    if session.keep_running:
        await _wait_for_signal(session)
    return 0


async def _create(api: Api, resource: Resource, body: dict[str, Any]) -> None:
    with contextlib.suppress(errors.AlreadyExists):  # a rerun on a kept state directory
        await api.create(resource, body)


async def _drive(api: Api, session: Session) -> summary.Summary:
    """Create the objects and poll until done; the summary of the done state."""
    work = session.workload
    await _create(api, NAMESPACES, workload.namespace(work))
    await _create(api, COMPUTE_DOMAINS, workload.compute_domain(work))
    created = session.clock()
    await _create(api, DEPLOYMENTS, workload.worker_deployment(work))
    display = progress.Display(session.out)
    ready_after: float | None = None
    while True:
        snapshot = await progress.gather(api, work)
        now = session.clock()
        display.show(progress.render(snapshot, work, now - created))
        if ready_after is None and progress.domain_status(snapshot) == "Ready":
            ready_after = now - created
        lacking = progress.missing(snapshot, work)
        silent = [
            str(w["metadata"]["name"])
            for w in snapshot.workers
            if not summary.channels_seen(summary.worker_log(session.layout, w))
        ]
        if not lacking and silent:
            lacking.append(f"the channel devices of workers {', '.join(sorted(silent))}")
        if not lacking and ready_after is not None:
            display.release()
            print(file=session.out)
            return await summary.gather(api, session.layout, snapshot, seconds_to_ready=ready_after)
        if now >= session.deadline:
            display.release()
            raise NotReached("; ".join(lacking))
        await asyncio.sleep(min(POLL_SECONDS, max(0.0, session.deadline - now)))


async def _wait_for_signal(session: Session) -> None:
    kubeconfig = session.layout.kubeconfig
    print(
        "\nThe cluster keeps running; press Ctrl-C (or send SIGTERM) to tear it down.\n"
        f"  export KUBECONFIG={kubeconfig}\n"
        "  kubectl get nodes\n"
        "  kubectl get computedomains,computedomaincliques,pods -A\n"
        f"  kubectl -n {session.workload.namespace} describe computedomain "
        f"{session.workload.domain}",
        file=session.out,
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
