"""The Helm chart's life on the simulated cluster, with the real helm binary: ``sim up
--manifests none`` starts a cluster without our install; ``helm install`` (the chart with its
``ci/sim-values.yaml``) brings up the controller and the plugins, and a ComputeDomain with a
worker on each node becomes Ready, as the kubectl commands of the chart's NOTES say; ``helm
upgrade`` with a changed value changes the plugin DaemonSet's pod template and the DaemonSet
replaces its pods, ``helm rollback`` restores the template (and the pods are replaced again),
and ``helm uninstall`` leaves nothing of ours but the CRDs (Helm never deletes what a chart's
``crds/`` installed).

It runs on the control plane the scenarios run on (``--control-plane``): the embedded one in
``make test``, kube-apiserver with Kubernetes' own controllers in ``make test-kube``. helm applies
server-side (Helm 4's default, said explicitly), so on the embedded control plane its
server-side apply is what installs, upgrades and rolls back. The test waits on the objects'
status itself, the same way on both, so that a timeout names what it waited for (helm's
``--wait`` works too: ``tests/e2e/test_kubectl_sim.py`` uses it).
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api
from computedomain_sim.cluster import install
from tests.unit.deployments.chart import CHART, REPO, helm, render

from . import kit

pytestmark = [pytest.mark.slow, pytest.mark.scenario, pytest.mark.timeout(600)]

Obj = dict[str, Any]
NS = "helm-life"
RELEASE = "computedomain"
SIM_VALUES = CHART / "ci" / "sim-values.yaml"
OUR_LABEL = "app.kubernetes.io/name=computedomain"
PLUGIN_PODS = f"{OUR_LABEL},app.kubernetes.io/component=kubelet-plugin"
PLUGIN = "computedomain-kubelet-plugin"
KUBECTL = REPO / ".venv" / "bin" / "kubectl"


def chart_kinds() -> list[resources.Resource]:
    """Every kind the chart's templates render (its CRDs apart), from ``helm template``."""
    kinds = {o["kind"]: install.resource_of(o) for o in render().values()}
    kinds.pop("CustomResourceDefinition")
    return sorted(kinds.values(), key=lambda r: r.kind)


@pytest.fixture(scope="module")
def bare_cluster(
    tmp_path_factory: pytest.TempPathFactory, control_plane: str
) -> Iterator[kit.Cluster]:
    with kit.module_cluster(
        tmp_path_factory,
        "helm-life",
        racks=1,
        nodes_per_rack=2,
        extra_args=["--manifests=none", "--no-wait-components"],
        control_plane=control_plane,
    ) as cluster:
        yield cluster


def helm_on(cluster: kit.Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return helm(*args, f"--kubeconfig={cluster.kubeconfig}")


def notes_commands(notes: str) -> list[list[str]]:
    """The kubectl commands the chart's NOTES tell the operator to run, for domain ``job``."""
    commands = [
        shlex.split(line.replace("<name>", "job").replace("<namespace>", NS))[1:]
        for line in notes.splitlines()
        if line.startswith("  kubectl ")
    ]
    assert any("--for=condition=Ready" in c for c in commands), notes
    return commands


def kubectl_on(cluster: kit.Cluster, args: list[str]) -> subprocess.CompletedProcess[str]:
    assert KUBECTL.is_file(), f"{KUBECTL} is missing: `make venv` installs kubectl with helm"
    return subprocess.run(
        [str(KUBECTL), f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


async def ours(api: Api) -> list[str]:
    """Our objects, as kind/namespace/name: those of the chart's kinds with our name label,
    the driver's ResourceSlices and any claim template (the controller makes them)."""
    found: list[str] = []
    for resource in chart_kinds():
        items, _ = await api.list_all(resource, label_selector=OUR_LABEL)
        found.extend(
            f"{resource.kind}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
            for o in items
        )
    slices, _ = await api.list_all(resources.RESOURCE_SLICES)
    found.extend(
        f"ResourceSlice//{s['metadata']['name']}"
        for s in slices
        if s["spec"].get("driver") == names.DRIVER_NAME
    )
    templates, _ = await api.list_all(resources.RESOURCE_CLAIM_TEMPLATES)
    found.extend(
        f"ResourceClaimTemplate/{t['metadata']['namespace']}/{t['metadata']['name']}"
        for t in templates
    )
    return sorted(found)


async def components_ready(api: Api, cluster: kit.Cluster, generation: int | None = None) -> None:
    """The controller Deployment and the plugin DaemonSet report every pod ready (and, when
    given, the DaemonSet observed ``generation`` and runs it on every node)."""

    async def probe() -> bool:
        try:
            deployment = await api.get(
                resources.DEPLOYMENTS, "computedomain-controller", kit.DRIVER_NAMESPACE
            )
            plugin = await api.get(resources.DAEMON_SETS, PLUGIN, kit.DRIVER_NAMESPACE)
        except errors.NotFound:
            return False
        status = plugin.get("status") or {}
        wanted = len(cluster.nodes)
        if generation is not None and (
            status.get("observedGeneration") != generation
            or status.get("updatedNumberScheduled") != wanted
        ):
            return False
        return (
            (deployment.get("status") or {}).get("readyReplicas") == 1
            and status.get("desiredNumberScheduled") == wanted
            and status.get("numberReady") == wanted
        )

    await kit.eventually(probe, what="the controller and the kubelet plugins ready", within=150)


def plugin_env(plugin: Obj) -> dict[str, Any]:
    """The environment of the plugin's container in a DaemonSet's template or in a pod."""
    spec = plugin["spec"]["template"]["spec"] if "template" in plugin["spec"] else plugin["spec"]
    (container,) = spec["containers"]
    return {e["name"]: e.get("value") for e in container["env"]}


async def plugin_pods(api: Api, cluster: kit.Cluster) -> list[Obj]:
    """The running plugin pods, one per node."""
    return await kit.pods_running(
        api, cluster, kit.DRIVER_NAMESPACE, selector=PLUGIN_PODS, count=len(cluster.nodes)
    )


def uids(pods: list[Obj]) -> set[str]:
    return {p["metadata"]["uid"] for p in pods}


async def test_install_upgrade_rollback_uninstall(bare_cluster: kit.Cluster) -> None:
    cluster = bare_cluster
    async with kit.api_of(cluster) as api:
        assert await ours(api) == [], "sim up --manifests none installed something of ours"

        installed = helm_on(cluster, "install", RELEASE, str(CHART), f"--values={SIM_VALUES}")
        await components_ready(api, cluster)
        await kit.create_namespace(api, NS)
        await kit.create_domain(api, NS, "job")
        for index, node in enumerate(cluster.nodes):
            await kit.create_worker(api, NS, "job", node, name=f"worker-{index}")
        await kit.domain_ready(api, cluster, NS, "job", within=150)
        for command in notes_commands(installed.stdout):
            done = await asyncio.to_thread(kubectl_on, cluster, command)
            assert done.returncode == 0, f"{command}: {done.stderr}"

        before = await api.get(resources.DAEMON_SETS, PLUGIN, kit.DRIVER_NAMESPACE)
        assert plugin_env(before)["LOG_VERBOSITY"] == "4"
        first = await plugin_pods(api, cluster)
        helm_on(
            cluster,
            "upgrade",
            RELEASE,
            str(CHART),
            f"--values={SIM_VALUES}",
            "--set=logVerbosity=6",
            "--server-side=true",
        )
        upgraded = await api.get(resources.DAEMON_SETS, PLUGIN, kit.DRIVER_NAMESPACE)
        assert plugin_env(upgraded)["LOG_VERBOSITY"] == "6"
        assert upgraded["spec"]["template"] != before["spec"]["template"]
        assert upgraded["metadata"]["generation"] > before["metadata"]["generation"]
        await components_ready(api, cluster, upgraded["metadata"]["generation"])
        rolled = await plugin_pods(api, cluster)
        assert not uids(rolled) & uids(first), "the upgrade did not replace the plugin pods"
        assert {plugin_env(p)["LOG_VERBOSITY"] for p in rolled} == {"6"}

        helm_on(cluster, "rollback", RELEASE, "1", "--server-side=true")
        rolled_back = await api.get(resources.DAEMON_SETS, PLUGIN, kit.DRIVER_NAMESPACE)
        assert rolled_back["spec"]["template"] == before["spec"]["template"]
        assert rolled_back["metadata"]["generation"] > upgraded["metadata"]["generation"]
        history = helm_on(cluster, "history", RELEASE, "--output=json").stdout
        assert '"Rollback to 1"' in history
        await components_ready(api, cluster, rolled_back["metadata"]["generation"])
        restored = await plugin_pods(api, cluster)
        assert not uids(restored) & uids(rolled), "the rollback did not replace the plugin pods"
        assert {plugin_env(p)["LOG_VERBOSITY"] for p in restored} == {"4"}
        await kit.domain_ready(api, cluster, NS, "job", within=150)

        # An operator deletes the domains before uninstalling and waits for their daemon pods
        # to go (docs/operations.md#uninstall): the controller removes the daemons and claim
        # templates, and the kubelet plugins, still installed, unprepare the daemons' claims.
        # A daemon pod still terminating when the plugin goes would stay Terminating for good,
        # as on any Kubernetes: the kubelet blocks a pod's end on its claims' unprepare.
        domain_uid = (await api.get(resources.COMPUTE_DOMAINS, "job", NS))["metadata"]["uid"]
        for index in range(len(cluster.nodes)):
            await kit.delete_now(api, resources.PODS, f"worker-{index}", NS)
        await api.delete(resources.COMPUTE_DOMAINS, "job", NS)
        await kit.gone(api, resources.COMPUTE_DOMAINS, "job", NS, within=150)

        async def no_daemon_pods() -> bool:
            return await kit.daemon_pods(api, domain_uid) == []

        await kit.eventually(no_daemon_pods, what="the domain's daemon pods gone", within=150)

        helm_on(cluster, "uninstall", RELEASE)

        async def namespace_gone() -> bool:
            try:
                await api.get(resources.NAMESPACES, kit.DRIVER_NAMESPACE)
            except errors.NotFound:
                return True
            return False

        async def what_is_left() -> str:
            namespace = await api.get(resources.NAMESPACES, kit.DRIVER_NAMESPACE)
            pods, _ = await api.list_all(resources.PODS, kit.DRIVER_NAMESPACE)
            left = [
                f"{p['metadata']['name']} phase={(p.get('status') or {}).get('phase')} "
                f"deleting={bool(p['metadata'].get('deletionTimestamp'))} "
                f"finalizers={p['metadata'].get('finalizers')}"
                for p in pods
            ]
            return f"namespace status {namespace.get('status')}; pods: {left}"

        await kit.eventually(
            namespace_gone,
            what=f"namespace {kit.DRIVER_NAMESPACE} gone",
            within=300,
            explain=what_is_left,
        )

        # The kubelets delete the driver's ResourceSlices once its plugin has been gone for their
        # wiping delay (30 s, as the real kubelet's).
        async def nothing_of_ours() -> bool:
            return await ours(api) == []

        await kit.eventually(nothing_of_ours, what="nothing of ours left", within=120)
        assert helm_on(cluster, "list", "--all-namespaces", "--short").stdout.strip() == ""
        records, _ = await api.list_all(resources.SECRETS, label_selector="owner=helm")
        assert records == [], "helm's release records outlived the release"
        crds, _ = await api.list_all(resources.CUSTOM_RESOURCE_DEFINITIONS)
        expected = sorted(_crd_name(p) for p in (CHART / "crds").iterdir())
        assert sorted(c["metadata"]["name"] for c in crds) == expected


def _crd_name(path: Path) -> str:
    """``resource.nvidia.com_computedomains.yaml`` -> ``computedomains.resource.nvidia.com``."""
    group, plural = path.stem.split("_", 1)
    return f"{plural}.{group}"
