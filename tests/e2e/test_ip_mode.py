"""IP mode (docs/compatibility.md#dns-names-and-the-hosts-file): with the feature gates
``IMEXDaemonsWithDNSNames=false`` and ``ComputeDomainCliques=false`` on the controller and the
kubelet plugin (an overlay of the simulation's manifests), the daemons register in the
ComputeDomain's ``status.nodes``, wait until all ``numNodes`` have, and then write the daemon pods'
IP addresses into ``nodes.cfg`` in the order of ``status.nodes``; no DNS name is written to any
hosts file and no clique object is made. The workers run with their channel and the domain gets
Ready.

The cluster also records RBAC use (``--rbac-usage``): status mode runs under the deployed roles
without a denial, and uses the daemon's status-mode rules (``deployments/base/rbac-daemon.yaml``
justifies them by this test). On the real control plane (``--control-plane=kube``) the record is
kube-apiserver's audit log: the decisions and the roles are the real authorizer's, and a request
counts for the first rule of its role that grants it (:mod:`computedomain_sim.controlplane.audit`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from computedomain.api import names

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("ip-mode"),
    pytest.mark.timeout(300),
]

GATES = "IMEXDaemonsWithDNSNames=false,ComputeDomainCliques=false"
DAEMON_SA = f"system:serviceaccount:{kit.DRIVER_NAMESPACE}:{names.DAEMON_SERVICE_ACCOUNT}"


@attrs.frozen
class Setup:
    cluster: kit.Cluster
    usage: Path
    control_plane: str


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, control_plane: str) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("ip-mode")
    env = {"FEATURE_GATES": GATES}
    manifests = kit_extra.overlay(root / "overlay", controller_env=env, plugin_env=env)
    usage = root / "rbac-usage.jsonl"
    with kit.module_cluster(
        tmp_path_factory,
        "ip-mode-sim",
        racks=1,
        nodes_per_rack=2,
        extra_args=[f"--manifests={manifests}", f"--rbac-usage={usage}"],
        control_plane=control_plane,
    ) as cluster:
        yield Setup(cluster, usage, control_plane)


def _nodes_cfg(cluster: kit.Cluster, node: str, uid: str) -> list[str]:
    path = cluster.plugin_dir(node) / names.DOMAINS_SUBDIR / uid / "nodes.cfg"
    return path.read_text().split() if path.is_file() else []


async def test_ip_mode_writes_ips_in_status_order(setup: Setup) -> None:
    cluster = setup.cluster
    async with kit.api_of(cluster) as api:
        ns = await kit.create_namespace(api, "ipmode")
        domain = await kit.create_domain(api, ns, "job", num_nodes=2)
        uid = domain["metadata"]["uid"]
        await kit.create_worker_deployment(api, ns, "job", name="workers", replicas=2)
        workers = await kit.pods_running(
            api, cluster, ns, selector="app=workers", count=2, domain="job"
        )
        domain = await kit.domain_ready(api, cluster, ns, "job")
        entries: list[dict[str, Any]] = domain["status"]["nodes"]
        daemons = await kit.daemon_pods(api, uid)
        ips = {p["spec"]["nodeName"]: p["status"]["podIP"] for p in daemons}
        assert sorted(e["name"] for e in entries) == ["r0n0", "r0n1"]
        assert {e["name"]: e["ipAddress"] for e in entries} == ips
        expected = [e["ipAddress"] for e in entries]
        for node in ("r0n0", "r0n1"):

            async def written(node: str = node) -> list[str] | None:
                return _nodes_cfg(cluster, node, uid) or None

            assert await kit.eventually(written, what=f"nodes.cfg on {node}") == expected
        for pod in daemons:
            assert kit.daemon_hosts(cluster, pod) == {}
        assert await kit.cliques(api, uid) == []
        for worker in workers:

            async def reported(w: dict[str, Any] = worker) -> dict[str, Any] | None:
                return kit.worker_report(cluster, w)

            report = await kit.eventually(reported, what="the worker's report")
            assert report["channels"] == ["channel0"]
        uses = await kit_extra.rbac_uses(api, setup.usage, setup.control_plane)

    denied = [u for u in uses if u.user.startswith("system:serviceaccount:") and u.rule is None]
    assert denied == []
    daemon_rules = {u.rule for u in uses if u.user == DAEMON_SA and u.rule is not None}
    assert ("ClusterRole/compute-domain-daemon-role", 0) in daemon_rules
    assert ("ClusterRole/compute-domain-daemon-role", 1) in daemon_rules
