"""The plugin's view of the cliques: only its own rack's, through a label selector, so that a
daemon's write in another rack reaches none of this rack's plugins; its own clique's entry
changes still wake its waiting claims."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin.cluster import InformerCluster
from computedomain.kubeletplugin.wakeups import domain_node_key
from tests.support.polling import eventually
from tests.unit.kubeletplugin.test_wakeups import Recorder

from .conftest import CLIQUE

OTHER_CLIQUE = "0d3c9a1e-5b7f-4e2a-9c8d-1f2e3d4c5b6a.4"


def clique_body(ns: str, cd_uid: str, clique: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.CLIQUE_KIND,
        "metadata": {
            "name": names.clique_object_name(cd_uid, clique),
            "namespace": ns,
            "labels": {names.COMPUTE_DOMAIN_LABEL: cd_uid, names.CLIQUE_LABEL: clique},
        },
        "daemons": [
            {"nodeName": node, "ipAddress": "10.0.0.7", "cliqueID": clique, "index": 0,
             "status": "NotReady"}
        ],
    }  # fmt: skip


async def test_a_node_watches_only_its_own_cliques(api: Api) -> None:
    ns = f"drv-{uuid.uuid4().hex[:8]}"
    await api.create(resources.NAMESPACES, {"metadata": {"name": ns}})
    cd_uid = str(uuid.uuid4())
    ours = await api.create(
        resources.COMPUTE_DOMAIN_CLIQUES, clique_body(ns, cd_uid, CLIQUE, "n1"), ns
    )
    theirs = await api.create(
        resources.COMPUTE_DOMAIN_CLIQUES, clique_body(ns, cd_uid, OTHER_CLIQUE, "m1"), ns
    )
    wakeups = Recorder()
    view = InformerCluster(api, node_name="n1", namespace=ns, clique_id=CLIQUE, wakeups=wakeups)
    tasks = [asyncio.create_task(i.run()) for i in view.informers]
    try:
        async with asyncio.timeout(15):
            for informer in view.informers:
                await informer.wait_for_sync()
        assert view.clique(names.clique_object_name(cd_uid, CLIQUE)) is not None
        assert view.clique(names.clique_object_name(cd_uid, OTHER_CLIQUE)) is None

        # The other rack's daemon turns Ready, then ours: only ours reaches this node.
        for obj in (theirs, ours):
            obj["daemons"][0]["status"] = "Ready"
            await api.update(resources.COMPUTE_DOMAIN_CLIQUES, obj)
        mine = domain_node_key(cd_uid, "n1")

        async def ours_rung() -> bool:
            return mine in wakeups.rung

        await eventually(ours_rung, what="our entry's wake")
        assert domain_node_key(cd_uid, "m1") not in wakeups.rung
        assert view.clique(names.clique_object_name(cd_uid, OTHER_CLIQUE)) is None
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
