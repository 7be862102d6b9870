"""The root CA publisher on the embedded API server: every namespace, existing or new, gets
``kube-root-ca.crt`` with the CA and kube-controller-manager's description; a deleted one comes
back and a changed one is restored."""

from __future__ import annotations

import asyncio
from typing import Any

from computedomain.kube import errors
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.events import EventRecorder
from computedomain.kube.resources import CONFIG_MAPS, NAMESPACES
from computedomain.kube.rest import Api, PatchType
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.controllers.rootca import DESCRIPTION, NAME, RootCaPublisher
from tests.support.polling import eventually

CA = "-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n"


async def published(api: Api, ns: str) -> dict[str, Any] | None:
    try:
        found = await api.get(CONFIG_MAPS, NAME, ns)
    except errors.NotFound:
        return None
    return found if found.get("data") == {"ca.crt": CA} else None


async def test_every_namespace_keeps_its_root_ca_configmap() -> None:
    async with EmbeddedApiServer() as server:
        api = await connect(ClientConfig(url=server.url, token=server.admin_token, qps=0))
        events = EventRecorder(api, component="root-ca")
        publisher = RootCaPublisher(api, ca_pem=CA, events=events)
        task = asyncio.create_task(publisher.run())
        try:
            first = await eventually(lambda: published(api, "default"), what="default's CA")
            assert first["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
            managers = {e["manager"] for e in first["metadata"]["managedFields"]}
            assert managers == {"kube-controller-manager"}

            await api.create(NAMESPACES, {"metadata": {"name": "late"}})
            await eventually(lambda: published(api, "late"), what="the new namespace's CA")

            await api.delete(CONFIG_MAPS, NAME, "late")
            await eventually(lambda: published(api, "late"), what="the deleted CA back")

            await api.patch(
                CONFIG_MAPS, NAME, {"data": {"ca.crt": "changed"}}, namespace="late",
                patch_type=PatchType.MERGE,
            )  # fmt: skip
            await eventually(lambda: published(api, "late"), what="the changed CA restored")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await api.close()
