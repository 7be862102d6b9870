"""The clusters tests run against: the driver's CRDs, an embedded API server with them
installed, an admin client of one, and a started in-process simulated cluster, shared by every
test folder.

Each is a context manager, so a fixture of any scope (or a test itself) can hold one; what is
started is always stopped, also when the test fails.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Final

from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain_sim.apiserver import testing
from computedomain_sim.cluster.cluster import ClusterConfig, SimCluster
from computedomain_sim.cluster.topology import Topology

__all__ = ["CRDS", "admin_api", "crd_server", "running_cluster"]

CRDS: Final = Path(__file__).resolve().parents[2] / "deployments" / "base" / "crds"


@contextlib.contextmanager
def crd_server(directory: Path, **options: Any) -> Iterator[testing.RunningServer]:
    """An embedded API server (``options`` as for :func:`testing.running`) with the driver's
    CRDs installed; stopped on exit."""
    with testing.running(directory, **options) as running:
        running.install_crds([CRDS])
        yield running


@contextlib.asynccontextmanager
async def admin_api(server: testing.RunningServer, **options: Any) -> AsyncIterator[Api]:
    """A client of ``server`` with its admin token and no client-side rate limit (``options``:
    further :class:`ClientConfig` fields); closed on exit."""
    client = await connect(ClientConfig(url=server.url, token=server.token, qps=0, **options))
    try:
        yield client
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def running_cluster(
    state_dir: Path,
    *,
    racks: int = 1,
    nodes_per_rack: int = 2,
    manifests: Path | None = None,
    components: bool = False,
    within: float = 30.0,
    **settings: Any,
) -> AsyncIterator[SimCluster]:
    """A started simulated cluster of ``racks`` x ``nodes_per_rack`` nodes with ``manifests``
    installed (none by default: a bare cluster), Ready (and, with ``components``, the installed
    components too) within ``within`` seconds; stopped on exit. ``settings`` are further
    :class:`ClusterConfig` fields (isolation, API server stages...)."""
    cluster = SimCluster(
        ClusterConfig(
            state_dir=state_dir,
            topology=Topology(racks, nodes_per_rack, seed=str(state_dir)),
            manifests=manifests,
            **settings,
        )
    )
    try:
        await cluster.start()
        await cluster.wait_ready(components=components, within=within)
        yield cluster
    finally:
        await cluster.stop()
