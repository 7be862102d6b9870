"""kubectl against the embedded API server: what it prints for get/apply/patch/wait/delete
with the project's CRDs (kubectl from `make venv`)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from computedomain_sim.apiserver import testing
from tests import binaries
from tests.support.clusters import CRDS

pytestmark = [pytest.mark.kubectl]

REPO = Path(__file__).resolve().parents[2]

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def kubectl(apiserver: testing.RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    program = binaries.kubectl()
    home = tmp_path_factory.mktemp("kubectl-home")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(apiserver.kubeconfig),
    }

    def run(
        *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [program, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        if check and proc.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    return run


def _cd(name: str, mode: str | None = None, rct: str = "rct") -> str:
    channel: dict[str, object] = {"resourceClaimTemplate": {"name": rct}}
    if mode is not None:
        channel["allocationMode"] = mode
    doc = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"channel": channel},
    }
    return yaml.safe_dump(doc)


def test_apply_crds_then_get(kubectl: Kubectl) -> None:
    out = kubectl("apply", "-f", str(CRDS)).stdout
    assert (
        "customresourcedefinition.apiextensions.k8s.io/computedomains.resource.nvidia.com created"
        in out
    )
    kubectl("wait", "--for=condition=Established", "crd/computedomains.resource.nvidia.com")
    names = kubectl("get", "crd", "-o", "name").stdout.split()
    assert (
        "customresourcedefinition.apiextensions.k8s.io/computedomains.resource.nvidia.com" in names
    )


def test_apply_get_patch_wait_delete(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(CRDS))
    out = kubectl("apply", "-f", "-", stdin=_cd("k1")).stdout
    assert out.strip() == "computedomain.resource.nvidia.com/k1 created"
    unchanged = kubectl("apply", "-f", "-", stdin=_cd("k1")).stdout
    assert unchanged.strip() == "computedomain.resource.nvidia.com/k1 unchanged"
    table = kubectl("get", "computedomains").stdout.splitlines()
    assert table[0].split() == ["NAME", "AGE"]
    assert table[1].split()[0] == "k1"
    patched = kubectl(
        "patch", "computedomain", "k1", "--type=merge", "-p", '{"metadata":{"labels":{"x":"y"}}}'
    ).stdout
    assert patched.strip() == "computedomain.resource.nvidia.com/k1 patched"
    waited = kubectl(
        "wait", "--for=jsonpath={.metadata.labels.x}=y", "computedomain/k1", "--timeout=10s"
    ).stdout
    assert waited.strip() == "computedomain.resource.nvidia.com/k1 condition met"
    kubectl(
        "patch", "computedomain", "k1", "--type=merge",
        "-p", '{"metadata":{"finalizers":["example.com/hold"]}}',
    )  # fmt: skip
    deleted = kubectl("delete", "computedomain", "k1", "--wait=false").stdout
    assert (
        deleted.strip() == 'computedomain.resource.nvidia.com "k1" deleted from default namespace'
    )
    still = kubectl("get", "computedomain", "k1", "-o", "jsonpath={.metadata.deletionTimestamp}")
    assert still.stdout.strip()
    kubectl("patch", "computedomain", "k1", "--type=json",
            "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')  # fmt: skip
    kubectl("wait", "--for=delete", "computedomain/k1", "--timeout=10s")
    gone = kubectl("get", "computedomain", "k1", check=False)
    assert gone.returncode == 1
    assert 'computedomains.resource.nvidia.com "k1" not found' in gone.stderr


def test_builtin_apply_uses_strategic_merge(kubectl: Kubectl) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kp", "namespace": "default", "labels": {"app": "a"}},
        "spec": {
            "containers": [{"name": "c", "image": "img:1", "env": [{"name": "A", "value": "1"}]}]
        },
    }
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(pod))
    pod["spec"]["containers"][0]["image"] = "img:2"  # type: ignore[index]
    assert "configured" in kubectl("apply", "-f", "-", stdin=yaml.safe_dump(pod)).stdout
    image = kubectl("get", "pod", "kp", "-o", "jsonpath={.spec.containers[0].image}").stdout
    assert image == "img:2"
    rows = kubectl("get", "pods").stdout.splitlines()
    assert rows[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1].split()[:3] == ["kp", "0/1", "Pending"]
    labels = kubectl("get", "pods", "-l", "app=a", "-o", "name").stdout.split()
    assert labels == ["pod/kp"]
    kubectl("delete", "pod", "kp")


def test_imperative_create_sends_protobuf(kubectl: Kubectl) -> None:
    assert kubectl("create", "configmap", "pb", "--from-literal=a=b").stdout.strip() == (
        "configmap/pb created"
    )
    assert kubectl("get", "configmap", "pb", "-o", "jsonpath={.data.a}").stdout == "b"
    assert kubectl("create", "namespace", "pb-ns").stdout.strip() == "namespace/pb-ns created"
    assert kubectl("create", "serviceaccount", "pb-sa").stdout.strip() == (
        "serviceaccount/pb-sa created"
    )


def test_server_errors_are_printed_like_kube_apiserver(kubectl: Kubectl) -> None:
    missing = kubectl("get", "configmap", "nope", check=False)
    assert missing.stderr.strip() == 'Error from server (NotFound): configmaps "nope" not found'
    bad_cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}
    bad = kubectl("apply", "-f", "-", stdin=yaml.safe_dump(bad_cm), check=False)
    assert bad.returncode == 1
    assert (
        'The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a '
        "lowercase RFC 1123 subdomain must consist of"
    ) in bad.stderr
    typed = kubectl("create", "configmap", "Bad_Name", check=False)
    assert typed.stderr.startswith(
        'error: failed to create configmap: ConfigMap "Bad_Name" is invalid: metadata.name:'
    )
    twice = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twice"}})
    kubectl("create", "-f", "-", stdin=twice)
    again = kubectl("create", "-f", "-", stdin=twice, check=False)
    assert again.stderr.strip() == (
        'Error from server (AlreadyExists): error when creating "STDIN": configmaps "twice" '
        "already exists"
    )


def test_schema_defaults_immutability_and_enum(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(CRDS))
    kubectl("apply", "-f", "-", stdin=_cd("s1"))
    spec = yaml.safe_load(kubectl("get", "computedomain", "s1", "-o", "yaml").stdout)["spec"]
    assert spec["channel"]["allocationMode"] == "Single"
    assert spec["numNodes"] == 0
    changed = kubectl("apply", "-f", "-", stdin=_cd("s1", rct="other"), check=False)
    assert changed.returncode == 1
    assert changed.stderr.startswith('The ComputeDomain "s1" is invalid: spec: Invalid value: ')
    assert "A computeDomain.spec is immutable" in changed.stderr
    patched = kubectl(
        "patch", "computedomain", "s1", "--type=merge", "-p", '{"spec":{"numNodes":2}}', check=False
    )
    assert "A computeDomain.spec is immutable" in patched.stderr
    bad = kubectl("apply", "-f", "-", stdin=_cd("s2", mode="Foo"), check=False)
    assert bad.returncode == 1
    assert (
        'spec.channel.allocationMode: Unsupported value: "Foo": supported values: "All", "Single"'
    ) in bad.stderr
    assert bad.stderr.startswith('The ComputeDomain "s2" is invalid:')
    status = kubectl(
        "patch", "computedomain", "s1", "--subresource=status", "--type=merge",
        "-p", '{"status":{"status":"Ready"}}',
    )  # fmt: skip
    assert status.stdout.strip() == "computedomain.resource.nvidia.com/s1 patched"
    waited = kubectl(
        "wait", "--for=jsonpath={.status.status}=Ready", "computedomain/s1", "--timeout=10s"
    )
    assert waited.stdout.strip() == "computedomain.resource.nvidia.com/s1 condition met"


def test_create_token(kubectl: Kubectl, apiserver: testing.RunningServer) -> None:
    kubectl("create", "serviceaccount", "tok")
    token = kubectl("create", "token", "tok").stdout.strip()
    assert token.count(".") == 2
    assert apiserver.server.state is not None
    authenticator = apiserver.server.state.authenticator
    assert authenticator is not None
    user = authenticator.authenticate(token)
    assert user is not None
    assert user.name == "system:serviceaccount:default:tok"
    short = kubectl("create", "token", "tok", "--duration=1m", check=False)
    assert short.returncode == 1
    assert "may not specify a duration less than 10 minutes" in short.stderr


def test_diff_and_server_dry_run(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(CRDS))
    kubectl("apply", "-f", "-", stdin=_cd("d1"))
    same = kubectl("diff", "-f", "-", stdin=_cd("d1"), check=False)
    assert same.returncode == 0, same.stderr
    assert same.stdout == ""
    labelled = yaml.safe_load(_cd("d1"))
    labelled["metadata"]["labels"] = {"team": "blue"}
    changed = kubectl("diff", "-f", "-", stdin=yaml.safe_dump(labelled), check=False)
    assert changed.returncode == 1, changed.stderr
    assert "+    team: blue" in changed.stdout
    dry = kubectl("apply", "--dry-run=server", "-f", "-", stdin=_cd("d2")).stdout
    assert dry.strip() == "computedomain.resource.nvidia.com/d2 created (server dry run)"
    gone = kubectl("get", "computedomain", "d2", check=False)
    assert gone.returncode == 1


def test_server_side_apply_creates_then_conflicts(kubectl: Kubectl) -> None:
    doc = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ssa", "namespace": "default"},
            "data": {"size": "1"},
        }
    )
    created = kubectl("apply", "--server-side", "-f", "-", stdin=doc)
    assert created.stdout.strip() == "configmap/ssa serverside-applied"
    other = doc.replace('"1"', '"2"').replace("size: '1'", "size: '2'")
    conflict = kubectl(
        "apply", "--server-side", "--field-manager=other", "-f", "-", stdin=other, check=False
    )
    assert conflict.returncode == 1
    assert 'conflict with "kubectl": .data.size' in conflict.stderr
    forced = kubectl(
        "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-",
        stdin=other,
    )  # fmt: skip
    assert forced.stdout.strip() == "configmap/ssa serverside-applied"
    assert kubectl("get", "configmap", "ssa", "-o", "jsonpath={.data.size}").stdout == "2"
    managers = kubectl(
        "get", "configmap", "ssa", "--show-managed-fields",
        "-o", "jsonpath={.metadata.managedFields[*].manager}",
    ).stdout.split()  # fmt: skip
    # kubectl applied only data.size, which other took by force: kube-apiserver drops a
    # manager left with nothing, and so do we (docs/conformance.md)
    assert managers == ["other"]


def test_create_service_and_job_as_protobuf(kubectl: Kubectl) -> None:
    made = kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
    assert made.stdout.strip() == "service/web created"
    address = kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert address.startswith("10.")
    ports = kubectl("get", "service", "web", "-o", "jsonpath={.spec.ports[0].targetPort}").stdout
    assert ports == "8080"
    job = kubectl("create", "job", "batch-job", "--image=busybox", "--", "true")
    assert job.stdout.strip() == "job.batch/batch-job created"
    selector = kubectl("get", "job", "batch-job", "-o", "jsonpath={.spec.selector.matchLabels}")
    assert "batch.kubernetes.io/controller-uid" in selector.stdout
