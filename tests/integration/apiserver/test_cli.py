"""``computedomain sim apiserver``: URL first, kubeconfig written, clean stop on SIGTERM and
SIGINT, objects kept with --data-dir, a corrupt store reported with exit code 1."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml
from kubernetes import client, config

from computedomain_sim.apiserver import testing

REPO = Path(__file__).resolve().parents[3]


def _start(tmp: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "computedomain.cli.main", "sim", "apiserver", "--port", "0",
         "--kubeconfig", str(tmp / "kc"), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def test_sigint_stops_cleanly(tmp_path: Path) -> None:
    proc, url = _start(tmp_path)
    assert url.startswith("http://127.0.0.1:")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0


def test_serves_until_sigterm_and_keeps_data(tmp_path: Path) -> None:
    proc, url = _start(
        tmp_path,
        "--data-dir",
        str(tmp_path / "data"),
        "--crds",
        str(REPO / "deployments" / "base" / "crds"),
    )
    try:
        assert url.startswith("http://127.0.0.1:")
        kubeconfig = yaml.safe_load((tmp_path / "kc").read_text())
        assert kubeconfig["clusters"][0]["cluster"]["server"] == url
        api = config.new_client_from_config(str(tmp_path / "kc"))
        names = [
            c.metadata.name
            for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        ]
        assert "computedomains.resource.nvidia.com" in names
        client.CoreV1Api(api).create_namespaced_config_map(
            "default", {"metadata": {"name": "kept"}}
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    proc, url = _start(tmp_path, "--data-dir", str(tmp_path / "data"))
    try:
        api = config.new_client_from_config(str(tmp_path / "kc"))
        assert (
            client.CoreV1Api(api).read_namespaced_config_map("kept", "default").metadata.name
            == "kept"
        )
    finally:
        proc.terminate()
        assert proc.wait(30) == 0


def test_corrupt_store_exits_1(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "store.sqlite").write_bytes(b"garbage" * 1000)
    proc, first = _start(tmp_path, "--data-dir", str(data))
    assert proc.wait(30) == 1
    assert first == ""
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert "is corrupt" in err
    assert str(data / "store.sqlite") in err


def test_spawned_server_with_rbac(tmp_path: Path) -> None:
    with testing.spawned(tmp_path, "--rbac") as srv:
        assert requests.get(srv.url + "/api", timeout=5).status_code == 401
        headers = {"Authorization": f"Bearer {srv.token}"}
        assert (
            requests.get(srv.url + "/api/v1/nodes", headers=headers, timeout=5).status_code == 200
        )
    assert srv.process.returncode == 0


def test_acknowledged_writes_survive_a_kill(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with testing.spawned(tmp_path, "--data-dir", data) as srv:
        headers = {"Authorization": f"Bearer {srv.token}"}
        path = f"{srv.url}/api/v1/namespaces/default/configmaps"
        acked = []
        for i in range(30):
            resp = requests.post(
                path, json={"metadata": {"name": f"k{i}"}}, headers=headers, timeout=5
            )
            assert resp.status_code == 201
            acked.append(int(resp.json()["metadata"]["resourceVersion"]))
        srv.process.send_signal(signal.SIGKILL)
        srv.process.wait(30)
    with testing.spawned(tmp_path, "--data-dir", data) as srv:
        headers = {"Authorization": f"Bearer {srv.token}"}
        listed = requests.get(
            f"{srv.url}/api/v1/namespaces/default/configmaps", headers=headers, timeout=5
        ).json()
        names = {i["metadata"]["name"] for i in listed["items"]}
        assert {f"k{i}" for i in range(30)} <= names
        assert int(listed["metadata"]["resourceVersion"]) >= max(acked)


def test_tls_keeps_its_certificate_across_restarts(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with testing.spawned(tmp_path, "--tls", "--rbac", "--data-dir", data) as srv:
        assert srv.url.startswith("https://")
        api = config.new_client_from_config(str(srv.kubeconfig))
        assert client.CoreV1Api(api).read_namespace("default").metadata.name == "default"
        first = (tmp_path / "data" / "serving.crt").read_bytes()
    with testing.spawned(tmp_path, "--tls", "--data-dir", data):
        assert (tmp_path / "data" / "serving.crt").read_bytes() == first


def test_dispatcher_groups(capsys: pytest.CaptureFixture[str]) -> None:
    from computedomain.cli.main import main

    assert main(["sim"]) == 2
    assert "apiserver" in capsys.readouterr().out
    assert main([]) == 2
    assert "sim" in capsys.readouterr().out
