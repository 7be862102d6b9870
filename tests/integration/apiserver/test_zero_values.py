"""Objects read back as kube-apiserver returns them: zero values of fields Go omits when empty
are gone (empty labels and annotations, ``stdin: false``, a Service port's ``nodePort: 0``),
pointer fields keep theirs (``replicas: 0``), pod templates carry no ``enableServiceLinks``
(pods do), and a Secret's ``stringData`` is merged into ``data``."""

from __future__ import annotations

import base64

from kubernetes import client


def test_empty_metadata_maps_are_dropped(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    body = {
        "metadata": {"name": "e", "labels": {}, "annotations": {}, "finalizers": []},
        "data": {},
    }
    made = api_client.sanitize_for_serialization(core.create_namespaced_config_map(namespace, body))
    assert set(made["metadata"]) & {"labels", "annotations", "finalizers"} == set()
    assert "data" not in made


def test_zero_values_of_omitted_fields_go_and_pointers_stay(
    api_client: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api_client)
    container = {"name": "c", "image": "busybox", "stdin": False, "tty": False}
    body = {
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 0, "paused": False, "minReadySeconds": 0,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                         "spec": {"hostNetwork": False, "containers": [container]}},
        },
    }  # fmt: skip
    made = api_client.sanitize_for_serialization(apps.create_namespaced_deployment(namespace, body))
    spec = made["spec"]
    assert spec["replicas"] == 0
    assert "paused" not in spec
    assert "minReadySeconds" not in spec
    assert "hostNetwork" not in spec["template"]["spec"]
    assert "enableServiceLinks" not in spec["template"]["spec"]
    assert set(spec["template"]["spec"]["containers"][0]) & {"stdin", "tty"} == set()

    core = client.CoreV1Api(api_client)
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [container]}}
    made_pod = core.create_namespaced_pod(namespace, pod)
    assert made_pod.spec.enable_service_links is True

    ports = [{"port": 80, "nodePort": 0}]
    service = {
        "metadata": {"name": "s"},
        "spec": {"ports": ports, "publishNotReadyAddresses": False},
    }
    made_service = api_client.sanitize_for_serialization(
        core.create_namespaced_service(namespace, service)
    )
    assert "nodePort" not in made_service["spec"]["ports"][0]
    assert "publishNotReadyAddresses" not in made_service["spec"]


def test_string_data_is_merged_into_data(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    body = {"metadata": {"name": "s"}, "data": {"a": base64.b64encode(b"1").decode()},
            "stringData": {"user": "admin"}}  # fmt: skip
    made = api_client.sanitize_for_serialization(core.create_namespaced_secret(namespace, body))
    assert made["data"] == {"a": "MQ==", "user": base64.b64encode(b"admin").decode()}
    assert "stringData" not in made
