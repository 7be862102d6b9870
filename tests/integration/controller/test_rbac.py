"""The controller under exactly the RBAC it needs, on a server that enforces RBAC.

:data:`CLUSTER_RULES` and :data:`NAMESPACE_RULES` are the permissions the controller uses
(upstream's, plus events for the recorder; pods need only list/watch, the live read is a
LIST). A domain's whole life, a clique prune, leader election and events run with a
ServiceAccount token bound to these rules and nothing else; no request may be refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from computedomain.api import names
from computedomain.controller.controller import Controller
from computedomain.controller.metrics import ControllerMetrics
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.events import EventRecorder
from computedomain.kube.leaderelection import LeaderElector
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import CLIQUE, bench, entry
from tests.support.polling import eventually

CLUSTER_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["resource.nvidia.com"],
        "resources": ["computedomains"],
        "verbs": ["get", "list", "watch", "update"],
    },
    {
        "apiGroups": ["resource.nvidia.com"],
        "resources": ["computedomains/status"],
        "verbs": ["update"],
    },
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceclaimtemplates"],
        "verbs": ["get", "list", "watch", "create", "update", "delete"],
    },
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "create", "update"],
    },
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "update"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]
NAMESPACE_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["apps"],
        "resources": ["daemonsets"],
        "verbs": ["get", "list", "watch", "create", "update", "delete"],
    },
    {
        "apiGroups": ["resource.nvidia.com"],
        "resources": ["computedomaincliques"],
        "verbs": ["get", "list", "watch", "update"],
    },
]
RBAC = "rbac.authorization.k8s.io"


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    """This module's server enforces RBAC."""
    with testing.running(tmp_path_factory.mktemp("rbac"), rbac=True) as running:
        yield running


async def _token(server: testing.RunningServer, api: Any, namespace: str, name: str) -> str:
    account = await api.create(
        resources.SERVICE_ACCOUNTS, {"metadata": {"name": name, "namespace": namespace}}
    )
    binding_subject = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    role_name = f"{name}-{namespace}"
    await api.create(
        resources.CLUSTER_ROLES, {"metadata": {"name": role_name}, "rules": CLUSTER_RULES}
    )
    await api.create(
        resources.CLUSTER_ROLE_BINDINGS,
        {
            "metadata": {"name": role_name},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role_name},
            "subjects": binding_subject,
        },
    )
    await api.create(
        resources.ROLES,
        {"metadata": {"name": name, "namespace": namespace}, "rules": NAMESPACE_RULES},
    )
    await api.create(
        resources.ROLE_BINDINGS,
        {
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": name},
            "subjects": binding_subject,
        },
    )
    # Issued by the server's authenticator directly (the TokenRequest endpoint that does the
    # same over HTTP is tested in tests/integration/apiserver/test_auth.py).
    state = server.server.state
    assert state is not None
    token, _ = state.authenticator.issue_service_account_token(
        namespace, name, account["metadata"]["uid"]
    )
    return str(token)


async def test_controller_needs_nothing_more(apiserver: testing.RunningServer) -> None:
    async with bench(apiserver) as b:
        token = await _token(apiserver, b.api, b.driver, "compute-domain-controller")
        api = await connect(ClientConfig(url=apiserver.url, token=token, qps=0))
        recorder = EventRecorder(api, component="compute-domain-controller")
        controller = Controller(api, b.config(), metrics=ControllerMetrics(), recorder=recorder)
        elector = LeaderElector(
            api, lease_name="cd-controller", namespace=b.driver, identity="rbac-test-0"
        )
        tasks = [
            asyncio.create_task(recorder.run()),
            asyncio.create_task(elector.run(controller.run)),
        ]
        try:

            async def synced() -> bool:
                for task in tasks:
                    if task.done():
                        task.result()
                return controller.synced

            await eventually(synced, what="the controller to lead and sync")
            created = await b.create_domain("cd", num_nodes=1, template="chan")
            uid = created["metadata"]["uid"]
            await b.add_node("rbac-node", uid)
            pod = await b.daemon_pod(uid, "rbac-node", name="rbac-daemon")
            await b.set_clique(
                uid,
                [
                    entry("rbac-node", pod["status"]["podIP"]),
                    entry("gone-node", "10.9.9.9", index=1),
                ],
            )

            async def pruned() -> bool:
                clique = await b.api.get(
                    resources.COMPUTE_DOMAIN_CLIQUES,
                    names.clique_object_name(uid, CLIQUE),
                    b.driver,
                )
                return [d["nodeName"] for d in clique.get("daemons") or []] == ["rbac-node"]

            await eventually(pruned, what="the stale clique entry to be pruned")
            await b.wait_status("cd", lambda s: s["status"] == "Ready", "Ready")
            await eventually(recorder_flushed(recorder), what="events written")
            await b.delete_domain_and_wait("cd")
            node = await b.api.get(resources.NODES, "rbac-node")
            assert names.COMPUTE_DOMAIN_LABEL not in (node["metadata"].get("labels") or {})
            refused = {k: n for k, n in api.stats.snapshot().items() if k[2] in (401, 403)}
            assert refused == {}
            assert api.stats.total(verb="create", resource="events") >= 1
            assert api.stats.total(verb="list", resource="pods") >= 2  # informer + live read
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks, timeout=20)
            await api.close()


def recorder_flushed(recorder: EventRecorder) -> Any:
    async def flushed() -> bool:
        await recorder.flush()
        return True

    return flushed
