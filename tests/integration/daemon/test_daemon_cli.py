"""``cd-imex-daemon`` as a program: exit codes and messages before and after the start."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest

import computedomain
from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain_sim.apiserver import testing
from tests.integration.daemon.cluster import Cluster, random_cd_uid
from tests.integration.daemon.processes import DAEMON

BASE = {
    "PATH": os.environ.get("PATH", ""),
    "COMPUTE_DOMAIN_UUID": "0f4c2a3e-8d5b-4e1f-9a7c-6b2d1e0f3a4b",
    "CLIQUE_ID": "2df84740-d3cb-b5ce-4e7e-98352b5a71b5.1",
    "NODE_NAME": "n1",
    "POD_IP": "10.0.0.1",
    "POD_UID": "uid",
    "POD_NAME": "daemon",
    "POD_NAMESPACE": "driver",
    "MAX_NODES_PER_IMEX_DOMAIN": "18",
}


def daemon(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DAEMON, *args],
        env={**BASE, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"COMPUTE_DOMAIN_UUID": ""},
            "cd-imex-daemon: error: CDI container edits did not apply -- is CDI enabled in your "
            "container runtime?",
        ),
        (
            {"FEATURE_GATES": "IMEXDaemonsWithDNSNames=false"},
            "cd-imex-daemon: error: --feature-gates/FEATURE_GATES: feature gate validation "
            "failed: ComputeDomainCliques requires IMEXDaemonsWithDNSNames",
        ),
        (
            {"INDEX_POLICY": "nope"},
            "error: --index-policy/INDEX_POLICY: unknown index policy 'nope' (valid: ",
        ),
    ],
    ids=["no-cdi", "gates", "index-policy"],
)
def test_run_fails_with_a_clear_error_before_it_starts(env: dict[str, str], message: str) -> None:
    result = daemon("run", **env)
    assert result.returncode == 2
    assert message in result.stderr


def test_version() -> None:
    result = daemon("--version")
    assert (result.returncode, result.stdout) == (0, f"{computedomain.__version__}\n")


def test_a_sub_command_is_required() -> None:
    result = daemon()
    assert result.returncode == 2
    assert "run | check" in result.stderr


def test_check_without_a_clique_is_a_noop_success() -> None:
    result = daemon("check", CLIQUE_ID="")
    assert (result.returncode, result.stdout) == (0, "check succeeded (noop, clique ID is empty)\n")


def test_check_fails_when_nvidia_imex_is_not_ready(tmp_path: Path) -> None:
    result = daemon("--imex-ctl-binary", "/bin/false", "--imexd-dir", str(tmp_path), "check")
    assert result.returncode == 1
    assert "IMEX daemon check failed: error running /bin/false: exit status 1" in result.stderr


async def test_no_op_mode_labels_the_pod_and_exits_0_on_sigterm(
    server: testing.RunningServer, tmp_path: Path
) -> None:
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    cluster = Cluster(api, testing.unique_name("noop"))
    await cluster.create_namespace()
    cd_uid = random_cd_uid()
    await cluster.create_pod("daemon", "cpu-node", "10.0.0.5", cd_uid)
    env = {
        **BASE,
        "KUBECONFIG": str(server.kubeconfig),
        "CLIQUE_ID": "",
        "COMPUTE_DOMAIN_UUID": cd_uid,
        "POD_NAMESPACE": cluster.namespace,
        "IMEXD_DIR": str(tmp_path / "imexd"),
    }
    proc = await asyncio.create_subprocess_exec(
        DAEMON, "run", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(60):
            while b"no cliqueID" not in await proc.stdout.readline():
                pass
        pod = await api.get(resources.PODS, "daemon", cluster.namespace)
        assert pod["metadata"]["labels"][names.CLIQUE_LABEL] == ""
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            assert await proc.wait() == 0
        assert not (tmp_path / "imexd").exists()  # no files in no-op mode
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await api.close()
