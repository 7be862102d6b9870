"""``computedomain doctor`` on the simulated cluster, for the problems of running IMEX daemons:
each is caused for real and the doctor must name it.

The cluster (two racks of three nodes) installs the simulation's manifests with the controller's
``MAX_NODES_PER_IMEX_DOMAIN`` at 2 (an overlay of ``deployments/overlays/sim``), and runs the
daemons against the IMEX stand-ins through a wrapper directory (``--imex-path``) that, on the
nodes a test marks, turns on the stand-in's host-held session (``SIM_IMEX_HOST_SESSION_FILE``,
its ``NV_ERR_IN_USE`` switch) or replaces ``nvidia-imex`` with one that never answers:

- rack r0, three nodes of one domain: the third daemon finds no free index: ``IndexSpaceFull``;
- r1n0: a host ``nvidia-imex.service`` holds the session: ``HostIMEXConflict``;
- r1n1: ``nvidia-imex`` never comes up, so the ``check`` probe fails: ``DaemonNotReady``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import attrs
import pytest

from computedomain.cli.doctor import command, gathering
from computedomain.cli.doctor.findings import Cause, Finding
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from tests.support.polling import eventually

from . import kit_extra
from .conftest import run_cli
from .test_doctor_sim import create_domain, create_namespace, create_workload, diagnosed

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("doctor-daemon-sim")]

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 90.0

OVERLAY = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - {base}
patches:
  - target:
      kind: Deployment
      name: computedomain-controller
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {{name: MAX_NODES_PER_IMEX_DOMAIN, value: "2"}}
"""


@attrs.frozen
class Cluster:
    kubeconfig: Path
    markers: Path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("doctor-daemon-sim")
    markers = root / "markers"
    markers.mkdir()
    overlay = root / "overlay"
    overlay.mkdir()
    base = os.path.relpath(REPO / "deployments" / "overlays" / "sim", overlay)
    (overlay / "kustomization.yaml").write_text(OVERLAY.format(base=base))
    imex_path = kit_extra.imex_wrappers(root / "imex", markers)
    state = root / "sim"
    result = run_cli(
        "up", f"--state-dir={state}", "--racks=2", "--nodes-per-rack=3", "--timeout=120",
        f"--manifests={overlay}", f"--imex-path={imex_path}", check=False, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    try:
        yield Cluster(Path(result.stdout.strip().splitlines()[-1]), markers)
    finally:
        run_cli("down", f"--state-dir={state}", check=False)


@pytest.fixture
async def api(cluster: Cluster) -> AsyncIterator[Api]:
    client = await connect(ClientConfig(kubeconfig=str(cluster.kubeconfig)))
    try:
        yield client
    finally:
        await client.close()


async def _workers(api: Api, ns: str, domain: str, nodes: list[str]) -> None:
    for node in nodes:
        await create_workload(api, ns, domain, {"kubernetes.io/hostname": node}, name=node)


async def _diagnosed(cluster: Cluster, ns: str, cause: Cause) -> Finding:
    return await diagnosed(cluster.kubeconfig, ns, "job", cause, within=DEADLINE)


async def test_a_full_index_space_is_named(api: Api, cluster: Cluster) -> None:
    ns = await create_namespace(api, "big")
    await create_domain(api, ns, "job")
    await _workers(api, ns, "job", ["r0n0", "r0n1", "r0n2"])
    finding = await _diagnosed(cluster, ns, Cause.INDEX_SPACE_FULL)
    assert "MAX_NODES_PER_IMEX_DOMAIN=2" in finding.message
    assert finding.node in ("r0n0", "r0n1", "r0n2")
    assert "--max-nodes-per-imex-domain" in finding.remedy


async def test_a_host_imex_service_holding_the_session_is_named(api: Api, cluster: Cluster) -> None:
    (cluster.markers / "r1n0.held").touch()
    ns = await create_namespace(api, "held")
    await create_domain(api, ns, "job")
    await _workers(api, ns, "job", ["r1n0"])
    finding = await _diagnosed(cluster, ns, Cause.HOST_IMEX_CONFLICT)
    assert finding.node == "r1n0"
    assert "NV_ERR_IN_USE" in finding.message
    assert "systemctl disable --now nvidia-imex.service" in finding.remedy


async def test_a_daemon_whose_check_fails_is_named(api: Api, cluster: Cluster) -> None:
    (cluster.markers / "r1n1.hang").touch()
    ns = await create_namespace(api, "hang")
    await create_domain(api, ns, "job")
    await create_domain(api, ns, "control")
    await _workers(api, ns, "job", ["r1n1"])
    await create_workload(api, ns, "control", {"kubernetes.io/hostname": "r1n2"}, name="ctl")
    # A daemon started at the same time on a healthy node gets Ready, so a daemon still not
    # Ready after that is not merely starting.
    config = ClientConfig(kubeconfig=str(cluster.kubeconfig))

    async def control_healthy() -> bool:
        reports = await command.diagnose_cluster(config, gathering.Scope(ns, "control"))
        return bool(reports) and all(r.ok for r in reports)

    await eventually(control_healthy, within=DEADLINE, every=0.5, what="the control domain healthy")
    finding = await _diagnosed(cluster, ns, Cause.DAEMON_NOT_READY)
    assert finding.node == "r1n1"
    assert "runs but is not Ready" in finding.message
    job_pod = await api.get(resources.PODS, "r1n1", ns)
    assert job_pod["status"].get("phase") == "Pending"
