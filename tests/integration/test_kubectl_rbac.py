"""kubectl against the embedded API server with RBAC on (and TLS, since kubectl sends tokens
only over TLS): whoami, can-i, and the Forbidden message a ServiceAccount gets (kubectl from
`make venv`)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from computedomain_sim.apiserver import testing
from tests import binaries

pytestmark = [pytest.mark.kubectl]


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    with testing.running(tmp_path_factory.mktemp("rbac-kubectl"), rbac=True, tls=True) as running:
        yield running


def _kubectl(
    srv: testing.RunningServer, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin"), "HOME": str(home),
           "KUBECONFIG": str(srv.kubeconfig)}  # fmt: skip
    return subprocess.run(
        [binaries.kubectl(), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_whoami_can_i_and_forbidden(apiserver: testing.RunningServer, tmp_path: Path) -> None:
    whoami = _kubectl(apiserver, tmp_path, "auth", "whoami")
    assert "admin" in whoami.stdout
    assert "system:masters" in whoami.stdout
    assert _kubectl(apiserver, tmp_path, "auth", "can-i", "delete", "nodes").stdout.strip() == "yes"
    _kubectl(apiserver, tmp_path, "create", "serviceaccount", "viewer")
    token = _kubectl(apiserver, tmp_path, "create", "token", "viewer").stdout.strip()
    denied = _kubectl(apiserver, tmp_path, "--token", token, "get", "pods")
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:'
        'viewer" cannot list resource "pods" in API group "" in the namespace "default"'
    )
    assert (
        _kubectl(
            apiserver, tmp_path, "--token", token, "auth", "can-i", "list", "pods"
        ).stdout.strip()
        == "no"
    )
    made = _kubectl(apiserver, tmp_path, "create", "clusterrole", "pod-reader",
                    "--verb=get,list,watch", "--resource=pods")  # fmt: skip
    assert made.stdout.strip() == "clusterrole.rbac.authorization.k8s.io/pod-reader created"
    bound = _kubectl(apiserver, tmp_path, "create", "rolebinding", "viewer",
                     "--clusterrole=pod-reader", "--serviceaccount=default:viewer")  # fmt: skip
    assert bound.stdout.strip() == "rolebinding.rbac.authorization.k8s.io/viewer created"
    allowed = _kubectl(apiserver, tmp_path, "--token", token, "get", "pods")
    assert allowed.returncode == 0, allowed.stderr
    assert (
        _kubectl(
            apiserver, tmp_path, "--token", token, "auth", "can-i", "list", "pods"
        ).stdout.strip()
        == "yes"
    )


def test_as_runs_the_request_as_the_impersonated_user(
    apiserver: testing.RunningServer, tmp_path: Path
) -> None:
    account = "system:serviceaccount:default:default"
    can_i = _kubectl(
        apiserver, tmp_path, "auth", "can-i", "create", "configmaps", f"--as={account}"
    )
    assert can_i.stdout.strip() == "no"
    denied = _kubectl(apiserver, tmp_path, "get", "pods", "--as=nobody")
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "nobody" cannot list resource '
        '"pods" in API group "" in the namespace "default"'
    )
    whoami = _kubectl(apiserver, tmp_path, "auth", "whoami", "--as=nobody", "--as-group=devs")
    assert "nobody" in whoami.stdout
    assert "devs" in whoami.stdout
