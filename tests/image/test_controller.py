"""The image's controller reconciles a simulated cluster: ``sim up`` installs the simulation's
manifests with the controller Deployment scaled to zero, and the controller runs from the image
instead (``buildah run`` on the host's network) with the Deployment's own command and
environment, and the controller ServiceAccount's token in a kubeconfig mounted read-only. A
ComputeDomain with a worker on each node then becomes Ready and the workers run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from computedomain.kube import resources
from tests import binaries
from tests.e2e import kit
from tests.e2e.kit_extra import (
    CONTROLLER,
    CONTROLLER_SELECTOR,
    PLUGIN_SELECTOR,
    SIM_OVERLAY,
    component_pods,
)

from .conftest import BUILDAH, ISOLATION, Image, buildah

KUBECONFIG_IN_IMAGE = "/etc/kubeconfig"  # /var/run is a link, where buildah cannot mount
POD_NAME = "controller-from-image"


def without_controller(directory: Path) -> Path:
    """A kustomization: the simulation's manifests with the controller scaled to zero."""
    directory.mkdir(parents=True)
    base = os.path.relpath(SIM_OVERLAY, directory)
    (directory / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\n"
        f"resources: [{base}]\n"
        "patches:\n"
        f"  - target: {{kind: Deployment, name: {CONTROLLER}}}\n"
        "    patch: |-\n"
        "      - {op: replace, path: /spec/replicas, value: 0}\n"
    )
    return directory


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kit.Cluster]:
    manifests = without_controller(tmp_path_factory.mktemp("image-manifests") / "overlay")
    with kit.module_cluster(
        tmp_path_factory, "image-sim", racks=1, nodes_per_rack=2,
        extra_args=[f"--manifests={manifests}", "--no-wait-components"],
    ) as running:  # fmt: skip
        yield running


def controller_kubeconfig(cluster: kit.Cluster, path: Path) -> Path:
    """A kubeconfig of the cluster with the controller ServiceAccount's token (world-readable:
    the image's user reads it)."""
    token = subprocess.run(
        [binaries.kubectl(), f"--kubeconfig={cluster.kubeconfig}", "-n", kit.DRIVER_NAMESPACE,
         "create", "token", CONTROLLER, "--duration=1h"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sim", "cluster": admin["clusters"][0]["cluster"]}],
        "users": [{"name": "controller", "user": {"token": token}}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "controller"}}],
        "current-context": "sim",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o644)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def ready(endpoint: str) -> bool:
    """Whether the controller at ``endpoint`` answers /readyz with 200."""
    try:
        with urllib.request.urlopen(f"http://{endpoint}/readyz", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def pod_command(deployment: dict[str, Any], http_endpoint: str) -> tuple[list[str], dict[str, str]]:
    """The controller container's command and environment as the kubelet would give them, for a
    pod named :data:`POD_NAME` whose IP is the loopback address, serving on ``http_endpoint``."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    fields = {
        "metadata.name": POD_NAME,
        "metadata.namespace": deployment["metadata"]["namespace"],
        "status.podIP": "127.0.0.1",
    }
    env: dict[str, str] = {}

    def expand(text: str) -> str:
        return re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), text)

    for entry in container["env"]:
        if "value" in entry:
            env[entry["name"]] = expand(entry["value"])
        else:
            env[entry["name"]] = fields[entry["valueFrom"]["fieldRef"]["fieldPath"]]
    env["HTTP_ENDPOINT"] = http_endpoint
    return [expand(word) for word in container["command"]], env


@contextlib.contextmanager
def controller_from_image(
    image: Image, kubeconfig: Path, command: list[str], env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """The image's controller under ``buildah run``, stopped (its process group) after."""
    made = buildah("from", "--pull=never", image.name, timeout=300)
    assert made.returncode == 0, made.stderr
    container = made.stdout.strip()
    options = ["--network=host", f"--volume={kubeconfig}:{KUBECONFIG_IN_IMAGE}:ro"]
    for key, value in {**env, "KUBECONFIG": KUBECONFIG_IN_IMAGE}.items():
        options.append(f"--env={key}={value}")
    try:
        with log.open("wb") as out:
            process = subprocess.Popen(
                [*BUILDAH, "run", ISOLATION, *options, container, "--", *command],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
    finally:
        buildah("rm", container)


async def test_the_images_controller_makes_a_domain_ready(
    image: Image, cluster: kit.Cluster, tmp_path: Path
) -> None:
    kubeconfig = controller_kubeconfig(cluster, tmp_path / "kubeconfig")
    endpoint = f"127.0.0.1:{free_port()}"
    log = tmp_path / "controller.log"
    async with kit.api_of(cluster) as api:
        deployment = await api.get(resources.DEPLOYMENTS, CONTROLLER, kit.DRIVER_NAMESPACE)
        assert deployment["spec"]["replicas"] == 0
        command, env = pod_command(deployment, endpoint)
        assert command[0] == "cd-controller"
        await kit.pods_running(
            api, cluster, kit.DRIVER_NAMESPACE, selector=PLUGIN_SELECTOR, count=2
        )
        with controller_from_image(image, kubeconfig, command, env, log) as process:

            async def serving() -> bool:
                assert process.poll() is None, log.read_text()
                return await asyncio.to_thread(ready, endpoint)

            await kit.eventually(serving, what="the image's controller ready")
            ns = await kit.create_namespace(api, "from-image")
            await kit.create_domain(api, ns, "job", num_nodes=2)
            await kit.create_worker_deployment(api, ns, "job", name="workers", replicas=2)
            workers = await kit.pods_running(
                api, cluster, ns, selector="app=workers", count=2, domain="job"
            )
            domain = await kit.domain_ready(api, cluster, ns, "job")
            assert process.poll() is None, log.read_text()
        assert {w["spec"]["nodeName"] for w in workers} == set(cluster.nodes)
        assert len(domain["status"]["nodes"]) == 2
        assert await component_pods(api, CONTROLLER_SELECTOR) == []
    assert "job" in log.read_text()
