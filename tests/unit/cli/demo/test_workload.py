"""The demo's objects: a domain sized for the workers, workers spread one per node, each with a
channel claim from the domain's template, and a worker script that reports its devices."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from computedomain.api import names
from computedomain_sim.cli.demo import workload
from computedomain_sim.kubelet.launch import ENV_DEV_DIR


def test_the_domain_counts_every_worker_and_names_the_template() -> None:
    work = workload.Workload(workers=4)
    domain = workload.compute_domain(work)
    assert domain["apiVersion"] == names.GROUP_VERSION
    assert domain["spec"]["numNodes"] == 4
    assert domain["spec"]["channel"]["resourceClaimTemplate"]["name"] == work.template


def test_workers_are_one_per_node_and_claim_a_channel() -> None:
    work = workload.Workload(workers=6, namespace="ns", domain="job")
    deployment = workload.worker_deployment(work)
    spec = deployment["spec"]
    assert spec["replicas"] == 6
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    pod = spec["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == work.selector
    (claim,) = pod["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == "job-channel"
    (container,) = pod["containers"]
    assert container["resources"]["claims"] == [{"name": claim["name"]}]


def test_a_workload_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="workers"):
        workload.Workload(workers=0)
    assert attrs.evolve(workload.Workload(workers=1), workers=2).workers == 2


@pytest.mark.parametrize(
    ("channels", "printed"),
    [
        (["channel0"], "/dev/nvidia-caps-imex-channels/channel0"),
        ([], "none"),
    ],
    ids=["one-channel", "no-channel"],
)
def test_the_worker_prints_the_channels_it_sees(
    tmp_path: Path, channels: list[str], printed: str
) -> None:
    devices = tmp_path / "dev" / "nvidia-caps-imex-channels"
    devices.mkdir(parents=True)
    for channel in channels:
        (devices / channel).touch()
    script = workload.WORKER_SCRIPT.replace("while True:\n    time.sleep(3600)\n", "")
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, ENV_DEV_DIR: str(tmp_path / "dev")},
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert result.stdout == f"{workload.CHANNELS_MARKER} {printed}\n"
