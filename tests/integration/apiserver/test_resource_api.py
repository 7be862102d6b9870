"""resource.k8s.io/v1 through ``ResourceV1Api``: DeviceClasses, ResourceSlices with the
kubelet's field selectors, ResourceClaims with their status subresource, and templates."""

from __future__ import annotations

import pytest
from kubernetes import client

DRIVER = "compute-domain.nvidia.com"


def _slice(name: str, node: str, driver: str = DRIVER) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": "channel-0",
                    "attributes": {"type": {"string": "channel"}, "id": {"int": 0}},
                }
            ],
        },
    }


def test_device_classes_and_slices(api_client: client.ApiClient) -> None:
    api = client.ResourceV1Api(api_client)
    dc = api.create_device_class(
        {
            "metadata": {"name": "compute-domain-default-channel.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
        }
    )
    assert dc.metadata.generation == 1
    assert dc.spec.selectors[0].cel.expression.startswith("device.driver")
    for name, node, driver in (
        ("s1", "n1", DRIVER),
        ("s2", "n2", DRIVER),
        ("s3", "n1", "gpu.nvidia.com"),
    ):
        api.create_resource_slice(_slice(name, node, driver))
    on_n1 = api.list_resource_slice(field_selector=f"spec.nodeName=n1,spec.driver={DRIVER}")
    assert [s.metadata.name for s in on_n1.items] == ["s1"]
    device = on_n1.items[0].spec.devices[0]
    assert device.attributes["id"].int == 0
    api.delete_collection_resource_slice(field_selector="spec.nodeName=n1")
    assert [s.metadata.name for s in api.list_resource_slice().items] == ["s2"]


def test_claims_templates_and_status(api_client: client.ApiClient, namespace: str) -> None:
    api = client.ResourceV1Api(api_client)
    request = {
        "name": "channel",
        "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"},
    }
    api.create_namespaced_resource_claim_template(
        namespace,
        {"metadata": {"name": "tpl"}, "spec": {"spec": {"devices": {"requests": [request]}}}},
    )
    claim = api.create_namespaced_resource_claim(
        namespace,
        {
            "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [request]}},
            "status": {"reservedFor": [{"resource": "pods", "name": "x", "uid": "1"}]},
        },
    )
    assert claim.status is None, "create drops status"
    claim.status = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "channel", "driver": DRIVER, "pool": "n1", "device": "channel-0"}
                ]
            }
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
    }
    updated = api.replace_namespaced_resource_claim_status("c", namespace, claim)
    assert updated.status.allocation.devices.results[0].device == "channel-0"
    assert updated.status.reserved_for[0].name == "p"
    patched = api.patch_namespaced_resource_claim_status(
        "c",
        namespace,
        {"status": {"reservedFor": [{"resource": "pods", "name": "q", "uid": "u2"}]}},
    )
    assert [r.name for r in patched.status.reserved_for] == ["p", "q"], "merged by uid"
    with pytest.raises(client.ApiException) as exc:
        api.patch_namespaced_resource_claim("c", namespace, {"spec": {"devices": {"requests": []}}})
    assert exc.value.status == 422, "a claim's spec is immutable"
