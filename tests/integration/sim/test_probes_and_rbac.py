"""HTTP, TCP and gRPC probes against the pod's own address, and the pod's service account token:
a container reaches the API server with its kubeconfig and RBAC decides what it may do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from computedomain.kube.resources import PODS, ROLE_BINDINGS, ROLES, SERVICE_ACCOUNTS
from tests.support.clusters import running_cluster
from tests.support.polling import eventually

from .helpers import events_for, log_of, namespace, pod, ready_pod

SERVERS = """
import asyncio, os, http.server, threading
from grpc import aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
ip = os.environ['POD_IP']
class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == '/readyz' else 404); self.end_headers()
    def log_message(self, *a): pass
threading.Thread(target=http.server.HTTPServer((ip, 8080), Ok).serve_forever, daemon=True).start()
async def main():
    server = aio.server()
    servicer = health.aio.HealthServicer()
    await servicer.set('liveness', health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    server.add_insecure_port(f'{ip}:51515')
    await server.start()
    print('serving', flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


async def test_http_tcp_and_grpc_probes_reach_the_pod(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim", nodes_per_rack=1) as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        container = {
            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "ports": [{"name": "http", "containerPort": 8080}],
            "startupProbe": {
                "grpc": {"port": 51515, "service": "liveness"},
                "periodSeconds": 1,
                "failureThreshold": 60,
            },
            "livenessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 1},
        }
        await api.create(PODS, pod("served", ns, SERVERS, container=container))
        # An exec probe's command is expanded from the container's env like the kubelet does,
        # and each failed run is an Unhealthy event quoting what the probe printed.
        failing = {
            "env": [{"name": "LEVEL", "value": "4"}],
            "readinessProbe": {
                "exec": {"command": ["sh", "-c", "echo not ready at level $(LEVEL); exit 1"]},
                "periodSeconds": 1,
            },
        }
        await api.create(
            PODS, pod("unready", ns, "import time; time.sleep(600)", container=failing)
        )
        ready = await ready_pod(api, "served", ns, within=60)
        (status,) = ready["status"]["containerStatuses"]
        assert status["started"] is True
        assert status["restartCount"] == 0

        async def unhealthy() -> list[dict[str, Any]]:
            return [e for e in await events_for(api, ns, "unready") if e["reason"] == "Unhealthy"]

        (event, *_) = await eventually(unhealthy, within=60, what="an Unhealthy event")
        assert event["type"] == "Warning"
        assert event["message"] == "Readiness probe failed: not ready at level 4"


# python3 is the virtual environment's: the simulated image puts its bin directory on PATH.
# As the components choose: the in-cluster configuration where the kubelet provides it (a private
# mount namespace), else the kubeconfig it names.
LIST_PODS = """
import os
from kubernetes import client, config
from kubernetes.client.rest import ApiException
if os.environ.get('KUBERNETES_SERVICE_HOST'):
    config.load_incluster_config()
else:
    config.load_kube_config()
core = client.CoreV1Api()
print('pods', len(core.list_namespaced_pod('work').items), flush=True)
try:
    core.list_node()
except ApiException as exc:
    print('nodes', exc.status, flush=True)
import time; time.sleep(600)
"""


async def test_pods_authenticate_as_their_service_account(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim", nodes_per_rack=1) as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        await api.create(SERVICE_ACCOUNTS, {"metadata": {"name": "reader", "namespace": ns}})
        await api.create(
            ROLES,
            {
                "metadata": {"name": "pod-reader", "namespace": ns},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
            },
        )
        await api.create(
            ROLE_BINDINGS,
            {
                "metadata": {"name": "reader", "namespace": ns},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "pod-reader",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
            },
        )
        await api.create(PODS, pod("reader", ns, LIST_PODS, serviceAccountName="reader"))
        running = await ready_pod(api, "reader", ns)

        async def verdicts() -> str | None:
            log = log_of(cluster, running)
            return log if "nodes" in log else None

        log = await eventually(verdicts, within=60, what="the container's API calls")
        assert "pods 1" in log
        assert "nodes 403" in log
