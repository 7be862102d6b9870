"""Host a simulated cluster in this process until SIGTERM or SIGINT: the work behind
``computedomain sim run`` (what ``sim up`` starts in the background). A signal that comes while
the cluster starts stops it at once.

It reports its phase in the state directory's ``cluster.json`` through
:func:`.service.write_state`, which is how ``sim up`` (:func:`.service.up`) learns that the
cluster is Ready or has failed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from . import service
from .cluster import ClusterConfig, SimCluster
from .layout import StateLayout

__all__ = ["run"]


async def run(config: ClusterConfig, *, wait_components: bool, within: float) -> int:
    """Host the cluster in this process until SIGTERM/SIGINT. Exit code 0, or 1 if it failed."""
    layout = StateLayout(config.state_dir)
    layout.root.mkdir(parents=True, exist_ok=True)
    base = {"pid": os.getpid(), "stateDir": str(layout.root)}
    service.write_state(layout, {**base, "phase": service.STARTING})
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    cluster = SimCluster(config)
    starting = asyncio.ensure_future(_bring_up(cluster, wait_components, within))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([starting, stopping], return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        # Stopped while starting (a real control plane takes a while): no need to wait it out.
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await cluster.stop()
        service.write_state(layout, {**base, "phase": service.STOPPED})
        return 0
    try:
        starting.result()
    except Exception as exc:
        service.write_state(
            layout, {**base, "phase": service.FAILED, "error": f"{type(exc).__name__}: {exc}"}
        )
        print(f"error: {exc}", file=sys.stderr, flush=True)
        await cluster.stop()
        return 1
    service.write_state(layout, {**base, "phase": service.READY, **cluster.describe()})
    print(f"ready: kubeconfig {layout.kubeconfig}", flush=True)
    await stopping
    await cluster.stop()
    service.write_state(layout, {**base, "phase": service.STOPPED})
    return 0


async def _bring_up(cluster: SimCluster, wait_components: bool, within: float) -> None:
    await cluster.start()
    await cluster.wait_ready(components=wait_components, within=within)
