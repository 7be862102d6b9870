"""``computedomain doctor`` on the simulated cluster: each problem is caused for real, with the
real controller, kubelet plugin, scheduler and kubelets, and the doctor must name it.

One cluster (two racks of two nodes) serves the module; each scenario uses its own node and its
own namespace, so they do not disturb each other:

- r0n0: the node loses its GPU label, so the plugin leaves it: ``PluginNotRegistered``;
- r0n1: the node carries another domain's label: ``NodeOfOtherDomain``, naming that domain;
- r1n0: a claim of the daemon device class already holds the node's ``daemon-0``, so the
  domain's daemon pod cannot be scheduled: ``DaemonPending`` with the scheduler's words;
- no node: the workload's node selector matches none: ``ClaimNotAllocated``.

Scenarios that need the IMEX daemon running (index space, host IMEX conflict, readiness check)
wait for ``cd-imex-daemon`` to be on main.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from computedomain.api import names
from computedomain.cli.doctor import command, gathering
from computedomain.cli.doctor.findings import Cause, Finding
from computedomain.cli.doctor.report import DomainReport
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from tests.support.polling import eventually

from .conftest import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("doctor-sim")]

DEADLINE = 60.0


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("doctor-sim") / "sim"
    result = run_cli(
        "up", f"--state-dir={state}", "--racks=2", "--nodes-per-rack=2", "--timeout=120",
        check=False, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    try:
        yield Path(result.stdout.strip().splitlines()[-1])
    finally:
        run_cli("down", f"--state-dir={state}", check=False)


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[Api]:
    client = await connect(ClientConfig(kubeconfig=str(kubeconfig)))
    try:
        yield client
    finally:
        await client.close()


async def create_namespace(api: Api, name: str) -> str:
    await api.create(resources.NAMESPACES, {"metadata": {"name": name}})
    return name


async def create_domain(api: Api, ns: str, name: str) -> dict[str, Any]:
    body = {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": {"name": name, "namespace": ns},
        "spec": {"channel": {"resourceClaimTemplate": {"name": f"{name}-channel"}}},
    }
    return await api.create(resources.COMPUTE_DOMAINS, body, ns)


async def create_workload(
    api: Api, ns: str, domain: str, node_selector: dict[str, str], *, name: str = "worker"
) -> None:
    """A pod of ``domain`` that sleeps, with a channel claim from the domain's template."""
    body = {
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "nodeSelector": node_selector,
            "containers": [
                {
                    "name": "main",
                    "image": "python",
                    "command": ["python3", "-c", "import time; time.sleep(600)"],
                    "resources": {"claims": [{"name": "imex"}]},
                }
            ],
            "resourceClaims": [{"name": "imex", "resourceClaimTemplateName": f"{domain}-channel"}],
        },
    }
    await api.create(resources.PODS, body, ns)


async def diagnosed(
    kubeconfig: Path,
    ns: str,
    domain: str,
    cause: Cause,
    *,
    within: float = DEADLINE,
    saying: str = "",
) -> Finding:
    """Run the doctor until it names ``cause`` for the domain (with ``saying`` in its message);
    fail at the deadline with its last answer."""
    config = ClientConfig(kubeconfig=str(kubeconfig))
    last: list[DomainReport] = []

    async def named() -> Finding | None:
        nonlocal last
        last = await command.diagnose_cluster(config, gathering.Scope(ns, domain))
        found = [f for r in last for f in r.findings if f.cause is cause and saying in f.message]
        return found[0] if found else None

    async def explain() -> str:
        return f"the doctor's last answer: {last}"

    return await eventually(
        named, what=f"the doctor naming {cause}", within=within, every=0.5, explain=explain
    )


def _doctor_cli(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "computedomain.cli.main", "doctor", "--kubeconfig",
         str(kubeconfig), *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


async def test_a_node_the_plugin_left_is_named(api: Api, kubeconfig: Path) -> None:
    ns = await create_namespace(api, "plugin-gone")
    patch = {"metadata": {"labels": {"nvidia.com/gpu.present": None}}}
    await api.patch(resources.NODES, "r0n0", patch)
    await create_domain(api, ns, "job")
    await create_workload(api, ns, "job", {"kubernetes.io/hostname": "r0n0"})
    # While the plugin pod terminates the doctor already names the cause, quoting that pod.
    finding = await diagnosed(
        kubeconfig, ns, "job", Cause.PLUGIN_NOT_REGISTERED, saying="no kubelet plugin pod"
    )
    assert finding.subject.name == "r0n0"
    assert "GPU label" in finding.remedy
    result = _doctor_cli(kubeconfig, "-n", ns, "-o", "json")
    assert result.returncode == 1, result.stderr
    causes = [f["cause"] for f in json.loads(result.stdout)["domains"][0]["findings"]]
    assert "PluginNotRegistered" in causes


async def test_a_node_of_another_domain_is_named(api: Api, kubeconfig: Path) -> None:
    ns = await create_namespace(api, "taken")
    other = await create_domain(api, ns, "other")
    patch = {"metadata": {"labels": {names.COMPUTE_DOMAIN_LABEL: other["metadata"]["uid"]}}}
    await api.patch(resources.NODES, "r0n1", patch)
    await create_domain(api, ns, "job")
    await create_workload(api, ns, "job", {"kubernetes.io/hostname": "r0n1"})
    finding = await diagnosed(kubeconfig, ns, "job", Cause.NODE_OF_OTHER_DOMAIN)
    assert finding.subject.name == "r0n1"
    assert f"belongs to ComputeDomain {ns}/other" in finding.message
    result = _doctor_cli(kubeconfig, "-n", ns, "job")
    assert result.returncode == 1
    assert "[NodeOfOtherDomain] Node r0n1: belongs to ComputeDomain taken/other" in result.stdout


async def test_an_unschedulable_daemon_pod_is_named(api: Api, kubeconfig: Path) -> None:
    ns = await create_namespace(api, "no-daemon-slot")
    thief = {
        "metadata": {"name": "holds-daemon-0", "namespace": ns},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "d", "exactly": {"deviceClassName": names.DAEMON_DEVICE_CLASS}}
                ]
            }
        },
    }
    await api.create(resources.RESOURCE_CLAIMS, thief, ns)
    holder = {
        "metadata": {"name": "holder", "namespace": ns},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": "r1n0"},
            "containers": [{"name": "main", "image": "python", "command": ["true"]}],
            "resourceClaims": [{"name": "d", "resourceClaimName": "holds-daemon-0"}],
        },
    }
    await api.create(resources.PODS, holder, ns)
    await create_domain(api, ns, "job")
    await create_workload(api, ns, "job", {"kubernetes.io/hostname": "r1n0"})
    finding = await diagnosed(kubeconfig, ns, "job", Cause.DAEMON_PENDING)
    assert finding.node == "r1n0"
    assert "cannot be scheduled" in finding.message
    assert "nodes are available" in finding.message


async def test_an_unallocatable_claim_is_named(api: Api, kubeconfig: Path) -> None:
    ns = await create_namespace(api, "nowhere")
    await create_domain(api, ns, "job")
    await create_workload(api, ns, "job", {"example.com/no-such-label": "true"})
    # Until the claim exists the doctor says so (same cause); then it quotes the scheduler.
    finding = await diagnosed(
        kubeconfig, ns, "job", Cause.CLAIM_NOT_ALLOCATED, saying="the scheduler says: 0/4"
    )
    assert "the scheduler says: 0/4 nodes are available" in finding.message
