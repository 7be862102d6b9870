"""Hollow nodes run a whole job: 2 racks x 3 hollow nodes, the real cd-controller as a process,
one ComputeDomain over both racks with a worker pinned to each node.

The workers run once their daemons registered (one clique per rack, unique indices, every entry
Ready) and the domain turns Ready; deleting the workers and the domain tears everything down:
daemon pods gone, node labels released, claims unprepared, the domain deleted (the controller's
finalizer released).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.hollow import manifests
from computedomain_sim.hollow.cluster import HollowCluster, HollowConfig
from tests.support.polling import eventually

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

NAMESPACE = "computedomain-system"
USERS = "hollow-users"
# Node files on a short path (unix socket paths must stay under 107 bytes); tmpfs when there is.
FILES = "/dev/shm" if Path("/dev/shm").is_dir() else None
NODES = [f"r{r}n{i}" for r in range(2) for i in range(3)]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Api, HollowCluster]]:
    server = EmbeddedApiServer()
    await server.start()
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    api = await connect(ClientConfig(url=server.url, token=server.admin_token, qps=0))
    found = manifests.load()
    await manifests.install_manifests(api, found.objects)
    env = {
        **os.environ,
        **found.controller_env,
        "POD_NAME": "hollow-test-controller",
        "NAMESPACE": NAMESPACE,
        "KUBECONFIG": str(kubeconfig),
        "HTTP_ENDPOINT": "",
    }
    log = (tmp_path / "controller.log").open("wb")
    controller = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("cd-controller")),
        env=env,
        stdout=log,
        stderr=asyncio.subprocess.STDOUT,
    )
    state = Path(tempfile.mkdtemp(prefix="hlt-", dir=FILES))
    hollow = HollowCluster(
        HollowConfig(
            client=ClientConfig(url=server.url, token=server.admin_token),
            state_dir=state,
            racks=2,
            nodes_per_rack=3,
            namespace=NAMESPACE,
            plugin_env=found.plugin_env,
        )
    )
    try:
        await hollow.start(within=60)
        yield api, hollow
    finally:
        await hollow.stop()
        controller.send_signal(signal.SIGTERM)
        await asyncio.wait_for(controller.wait(), 20)
        log.close()
        await api.close()
        await server.stop()
        shutil.rmtree(state, ignore_errors=True)


def _worker(node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": f"worker-{node}", "namespace": USERS},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [
                {"name": "main", "image": "worker", "resources": {"claims": [{"name": "imex"}]}}
            ],
            "resourceClaims": [{"name": "imex", "resourceClaimTemplateName": "job-channel"}],
        },
    }


async def test_a_domain_over_two_racks_runs_and_is_torn_down(
    cluster: tuple[Api, HollowCluster],
) -> None:
    api, _hollow = cluster
    slices, _ = await api.list_all(resources.RESOURCE_SLICES)
    assert sorted(s["spec"]["nodeName"] for s in slices) == NODES
    await api.create(resources.NAMESPACES, {"metadata": {"name": USERS}})
    domain = await api.create(
        resources.COMPUTE_DOMAINS,
        {
            "apiVersion": names.GROUP_VERSION,
            "kind": names.COMPUTE_DOMAIN_KIND,
            "metadata": {"name": "job", "namespace": USERS},
            "spec": {"channel": {"resourceClaimTemplate": {"name": "job-channel"}}},
        },
        USERS,
    )
    uid = domain["metadata"]["uid"]
    for node in NODES:
        await api.create(resources.PODS, _worker(node), USERS)

    async def all_running() -> bool:
        pods, _ = await api.list_all(resources.PODS, namespace=USERS)
        return len(pods) == len(NODES) and all(
            (p.get("status") or {}).get("phase") == "Running" for p in pods
        )

    await eventually(all_running, within=60, what="every worker Running")

    async def ready() -> bool:
        cd = await api.get(resources.COMPUTE_DOMAINS, "job", USERS)
        return (cd.get("status") or {}).get("status") == "Ready"

    await eventually(ready, within=30, what="the domain Ready")
    cliques, _ = await api.list_all(resources.COMPUTE_DOMAIN_CLIQUES, namespace=NAMESPACE)
    mine = [c for c in cliques if c["metadata"]["name"].startswith(uid)]
    assert len(mine) == 2  # one per rack
    for clique in mine:
        entries = clique.get("daemons") or []
        assert len(entries) == 3
        assert len({e["index"] for e in entries}) == 3
        assert {e["status"] for e in entries} == {"Ready"}
    assert sorted(e["nodeName"] for c in mine for e in c["daemons"]) == NODES

    for node in NODES:
        await api.delete(resources.PODS, f"worker-{node}", USERS)
    await api.delete(resources.COMPUTE_DOMAINS, "job", USERS)

    async def gone() -> bool:
        try:
            await api.get(resources.COMPUTE_DOMAINS, "job", USERS)
        except errors.NotFound:
            pass
        else:
            return False
        pods, _ = await api.list_all(resources.PODS, namespace=NAMESPACE)
        workers, _ = await api.list_all(resources.PODS, namespace=USERS)
        nodes, _ = await api.list_all(resources.NODES)
        labelled = [
            n for n in nodes if names.COMPUTE_DOMAIN_LABEL in (n["metadata"].get("labels") or {})
        ]
        return not pods and not workers and not labelled

    await eventually(gone, within=45, what="the domain, its pods and node labels gone")
