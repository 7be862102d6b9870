"""Services through the official client: a free cluster IP from the service range, node ports
for NodePort Services, headless Services, and addresses that are refused or cannot move."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from computedomain_sim.apiserver import services, testing


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    directory: Path = tmp_path_factory.mktemp("services")
    with testing.running(directory) as running:
        yield running


def _svc(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec},
    }


def test_a_service_gets_a_free_cluster_ip_and_defaults(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    one = core.create_namespaced_service(namespace, _svc("one"))
    two = core.create_namespaced_service(namespace, _svc("two"))
    for svc in (one, two):
        assert ipaddress.ip_address(svc.spec.cluster_ip) in services.SERVICE_CIDR
        assert svc.spec.cluster_ips == [svc.spec.cluster_ip]
        assert svc.spec.type == "ClusterIP"
        assert svc.spec.ports[0].protocol == "TCP"
        assert svc.spec.ports[0].target_port == 80
    assert one.spec.cluster_ip != two.spec.cluster_ip


def test_a_taken_or_foreign_address_is_refused(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    taken = core.create_namespaced_service(namespace, _svc("first")).spec.cluster_ip
    for address, reason in ((taken, "provided IP is already allocated"),
                            ("192.168.0.1", "is not in the valid range")):  # fmt: skip
        with pytest.raises(client.ApiException) as exc:
            core.create_namespaced_service(namespace, _svc("again", clusterIP=address))
        assert exc.value.status == 422
        assert reason in json.loads(exc.value.body)["message"]


def test_node_ports_headless_and_immutable_addresses(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    node_port = core.create_namespaced_service(namespace, _svc("np", type="NodePort"))
    assert node_port.spec.ports[0].node_port in services.NODE_PORTS
    headless = core.create_namespaced_service(namespace, _svc("hl", clusterIP="None"))
    assert headless.spec.cluster_ip == "None"
    body = node_port.to_dict()
    replaced = core.replace_namespaced_service(
        "np",
        namespace,
        {
            "metadata": {"name": "np", "resourceVersion": body["metadata"]["resource_version"]},
            "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [{"port": 80}]},
        },
    )
    assert replaced.spec.cluster_ip == node_port.spec.cluster_ip, "kept when not sent"
    assert replaced.spec.ports[0].node_port == node_port.spec.ports[0].node_port
    with pytest.raises(client.ApiException) as exc:
        core.patch_namespaced_service("np", namespace, {"spec": {"clusterIP": "10.96.0.200"}})
    assert exc.value.status == 422
    assert "field is immutable" in json.loads(exc.value.body)["message"]
