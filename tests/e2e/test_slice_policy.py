"""The ResourceSlice admission policy of ``deployments/`` against the API server's own token
machinery: a token of the kubelet plugin's service account bound to the plugin pod of one node
(what the plugin runs with) may write that node's ResourceSlices and no other node's.

This is kube-apiserver's TokenRequest (which puts the pod's node into the token), its
authenticator and its ValidatingAdmissionPolicy admission, so it runs on the real control plane
only (``make test-kube``): the embedded API server stores ValidatingAdmissionPolicies but does
not enforce them. Uses the shared cluster (no domain, no node taken).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain_sim.kubelet import tokens

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("default-cluster"),
    pytest.mark.timeout(300),
]

POOL = "slice-policy-test"


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, control_plane: str) -> Iterator[kit.Cluster]:
    if control_plane != "kube":
        pytest.skip("the embedded API server does not enforce ValidatingAdmissionPolicies")
    with kit_extra.lent(request.getfixturevalue("default_cluster")) as up:
        yield up


def _slice(node: str) -> dict[str, object]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{POOL}-{node}"},
        "spec": {
            "driver": names.DRIVER_NAME,
            "nodeName": node,
            "pool": {"name": POOL, "generation": 1, "resourceSliceCount": 1},
        },
    }


@pytest.fixture
async def plugin_api(cluster: kit.Cluster, tmp_path: Path) -> AsyncIterator[tuple[Api, str]]:
    """A client holding the plugin's token bound to its pod on the first node, and that node."""
    node = cluster.nodes[0]
    config = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(base64.b64decode(config["certificate-authority-data"]))
    async with kit.api_of(cluster) as admin:
        pods = await kit_extra.component_pods(admin, kit_extra.PLUGIN_SELECTOR)
        pod = next(p for p in pods if p["spec"].get("nodeName") == node)
        token = await tokens.request_token(admin, pod, seconds=600)
    api = await connect(ClientConfig(url=config["server"], token=token, ca_file=str(ca_file)))
    try:
        yield api, node
    finally:
        await api.close()


async def test_the_plugin_writes_only_its_own_nodes_slices(
    plugin_api: tuple[Api, str], cluster: kit.Cluster
) -> None:
    api, node = plugin_api
    other = next(n for n in cluster.nodes if n != node)
    with pytest.raises(errors.ApiError, match="may only write ResourceSlices of its own node"):
        await api.create(resources.RESOURCE_SLICES, _slice(other))
    created = await api.create(resources.RESOURCE_SLICES, _slice(node))
    assert created["spec"]["nodeName"] == node
    # The node's plugin may have removed the slice already: its pool is none of the plugin's.
    with contextlib.suppress(errors.NotFound):
        await api.delete(resources.RESOURCE_SLICES, created["metadata"]["name"])
    async with kit.api_of(cluster) as admin:
        listed, _ = await admin.list_all(resources.RESOURCE_SLICES)
    assert not [s for s in listed if s["spec"]["pool"]["name"] == POOL]
