"""kubectl against ``computedomain sim up``: the cluster serves HTTPS with a generated CA in
the kubeconfig, so kubectl sends the admin token and lists what runs, including the driver's
pods, which themselves reach the API over HTTPS with the CA from their service account
kubeconfig, and ``kubectl logs`` reads a container's log (kubectl from `make venv`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests import binaries
from tests.support.polling import eventually_sync

from .conftest import SimUp

pytestmark = [pytest.mark.kubectl]

DEADLINE = 90.0
DOMAIN = """\
apiVersion: resource.nvidia.com/v1beta1
kind: ComputeDomain
metadata: {name: seen-by-kubectl, namespace: default}
spec:
  numNodes: 1
  channel: {resourceClaimTemplate: {name: seen-by-kubectl-channel}}
"""


def kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binaries.kubectl(), f"--kubeconfig={kubeconfig}", "--request-timeout=20s", *args],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_kubectl_lists_the_domains_and_the_drivers_running_pods(sim_up: SimUp) -> None:
    config = yaml.safe_load(sim_up.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"].startswith("https://")
    assert cluster["certificate-authority-data"]

    created = kubectl(sim_up.kubeconfig, "apply", "-f", "-", stdin=DOMAIN)
    assert created.returncode == 0, created.stderr

    def driver_running() -> tuple[list[str], list[str]] | None:
        listed = kubectl(sim_up.kubeconfig, "get", "computedomains,pods", "-A")
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        running = [
            line for line in lines
            if line.startswith("computedomain-system ") and " 1/1 " in line and " Running " in line
        ]  # fmt: skip
        controller = [line for line in running if "computedomain-controller-" in line]
        plugins = [line for line in running if "computedomain-kubelet-plugin-" in line]
        return (lines, controller) if controller and len(plugins) == 2 else None

    # kubectl is a separate process: polled every half second until the deadline.
    lines, controller = eventually_sync(
        driver_running, within=DEADLINE, every=0.5, what="the driver's pods running"
    )
    assert any("seen-by-kubectl" in line for line in lines), "\n".join(lines)

    logs = kubectl(
        sim_up.kubeconfig, "-n", "computedomain-system", "logs", controller[0].split()[1]
    )
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.strip(), "the controller wrote nothing to its log"


def test_a_job_created_with_kubectl_runs_to_completion(sim_up: SimUp) -> None:
    created = kubectl(
        sim_up.kubeconfig, "create", "job", "hello", "--image=busybox", "--", "sh", "-c", "exit 0"
    )
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "job.batch/hello created"
    waited = kubectl(
        sim_up.kubeconfig, "wait", "--for=condition=complete", "job/hello", "--timeout=90s"
    )
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.strip() == "job.batch/hello condition met"
    shown = kubectl(sim_up.kubeconfig, "get", "job", "hello", "-o", "yaml")
    job = yaml.safe_load(shown.stdout)
    assert job["status"]["succeeded"] == 1
    assert job["spec"]["selector"]["matchLabels"] == {
        "batch.kubernetes.io/controller-uid": job["metadata"]["uid"]
    }
    pods = kubectl(
        sim_up.kubeconfig, "get", "pods", "-l", "job-name=hello",
        "-o", "jsonpath={.items[*].status.phase}",
    )  # fmt: skip
    assert pods.stdout.split() == ["Succeeded"]


STATEFUL_SET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ranks, namespace: default}
spec:
  replicas: 2
  serviceName: ranks
  selector: {matchLabels: {app: ranks}}
  template:
    metadata: {labels: {app: ranks}}
    spec:
      containers:
        - name: rank
          image: busybox
          command: [sh, -c, "trap 'exit 0' TERM; while :; do sleep 1; done"]
"""


def test_a_stateful_set_rolls_out_its_ordinals(sim_up: SimUp) -> None:
    created = kubectl(sim_up.kubeconfig, "apply", "-f", "-", stdin=STATEFUL_SET)
    assert created.returncode == 0, created.stderr
    rolled = kubectl(sim_up.kubeconfig, "rollout", "status", "statefulset/ranks", "--timeout=90s")
    assert rolled.returncode == 0, rolled.stderr
    names = kubectl(
        sim_up.kubeconfig, "get", "pods", "-l", "app=ranks",
        "-o", "jsonpath={.items[*].metadata.name}",
    )  # fmt: skip
    assert sorted(names.stdout.split()) == ["ranks-0", "ranks-1"]
