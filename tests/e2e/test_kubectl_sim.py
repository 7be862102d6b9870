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


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: web
          image: busybox
          command: [sh, -c, "trap 'exit 0' TERM; while :; do sleep 1; done"]
"""


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_deployment_rolls_out_rolls_back_and_keeps_its_history(sim_up: SimUp) -> None:
    k = sim_up.kubeconfig
    _ok(kubectl(k, "apply", "-f", "-", stdin=DEPLOYMENT))
    assert "successfully rolled out" in _ok(
        kubectl(k, "rollout", "status", "deployment/web", "--timeout=90s")
    )
    _ok(kubectl(k, "set", "image", "deployment/web", "web=busybox:2"))
    _ok(kubectl(k, "annotate", "deployment/web", "kubernetes.io/change-cause=busybox 2"))
    _ok(kubectl(k, "rollout", "status", "deployment/web", "--timeout=90s"))
    history = _ok(kubectl(k, "rollout", "history", "deployment/web")).splitlines()
    rows = [line.split(None, 1) for line in history if line[:1].isdigit()]
    assert rows == [["1", "<none>"], ["2", "busybox 2"]]

    assert "rolled back" in _ok(kubectl(k, "rollout", "undo", "deployment/web"))
    _ok(kubectl(k, "rollout", "status", "deployment/web", "--timeout=90s"))
    image = kubectl(
        k, "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    )
    assert _ok(image) == "busybox"
    revisions = _ok(kubectl(k, "rollout", "history", "deployment/web")).splitlines()
    assert [line.split()[0] for line in revisions if line[:1].isdigit()] == ["2", "3"]

    _ok(kubectl(k, "scale", "deployment/web", "--replicas=3"))
    _ok(kubectl(k, "rollout", "status", "deployment/web", "--timeout=90s"))
    sets = _ok(kubectl(k, "get", "rs", "-l", "app=web", "-o",
                       "jsonpath={range .items[*]}{.spec.replicas}{' '}{end}"))  # fmt: skip
    assert sorted(sets.split()) == ["0", "3"]
    pods = _ok(kubectl(k, "get", "pods", "-l", "app=web", "-o",
                       "jsonpath={.items[*].metadata.ownerReferences[0].kind}"))  # fmt: skip
    assert pods.split() == ["ReplicaSet"] * 3

    _ok(kubectl(k, "delete", "deployment", "web", "--cascade=foreground", "--timeout=90s"))
    left = _ok(kubectl(k, "get", "rs,pods", "-l", "app=web", "-o", "name"))
    assert left.strip() == ""


CHART_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: 2
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: main
          image: busybox
          env: [{name: MESSAGE, value: {{ .Values.message | quote }}}]
          command: [sh, -c, "trap 'exit 0' TERM; while :; do sleep 1; done"]
"""


CHART_OTHERS = """\
apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: {{ .Release.Name }}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: {{ .Release.Name }}}
rules:
  - {apiGroups: [resource.nvidia.com], resources: [computedomains], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: {{ .Release.Name }}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: {{ .Release.Name }}}
subjects: [{kind: ServiceAccount, name: {{ .Release.Name }}, namespace: {{ .Release.Namespace }}}]
---
apiVersion: resource.nvidia.com/v1beta1
kind: ComputeDomain
metadata: {name: {{ .Release.Name }}}
spec:
  numNodes: 0
  channel: {resourceClaimTemplate: {name: {{ .Release.Name }}-channel}}
"""


def test_helm_install_upgrade_uninstall_of_a_chart_with_a_deployment_service_rbac_and_domain(
    sim_up: SimUp, tmp_path: Path
) -> None:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: hello\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("message: one\n")
    (chart / "templates" / "deployment.yaml").write_text(CHART_DEPLOYMENT)
    (chart / "templates" / "others.yaml").write_text(CHART_OTHERS)

    def helm(*args: str) -> str:
        result = subprocess.run(
            [binaries.helm(), f"--kubeconfig={sim_up.kubeconfig}", "-n", "default", *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        return _ok(result)

    helm("install", "hello", str(chart), "--wait", "--timeout=90s")
    ready = kubectl(sim_up.kubeconfig, "get", "deployment", "hello",
                    "-o", "jsonpath={.status.readyReplicas}")  # fmt: skip
    assert _ok(ready) == "2"
    helm("upgrade", "hello", str(chart), "--wait", "--timeout=90s", "--set", "message=two")
    helm("upgrade", "hello", str(chart), "--wait=legacy", "--timeout=90s", "--set", "message=3")
    status = yaml.safe_load(
        _ok(kubectl(sim_up.kubeconfig, "get", "deployment", "hello", "-o", "yaml"))
    )["status"]
    assert (status["updatedReplicas"], status["availableReplicas"]) == (2, 2)
    path = "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}"
    revision = kubectl(sim_up.kubeconfig, "get", "deployment", "hello", "-o", f"jsonpath={path}")
    assert _ok(revision) == "3"
    # The chart's Service got a cluster IP, its service account may read domains and nothing
    # more (the RBAC authorizer answers for it), and its domain was admitted.
    ip = _ok(kubectl(sim_up.kubeconfig, "get", "service", "hello",
                     "-o", "jsonpath={.spec.clusterIP}"))  # fmt: skip
    assert ip.count(".") == 3
    who = "--as=system:serviceaccount:default:hello"
    can = kubectl(sim_up.kubeconfig, "auth", "can-i", "list", "computedomains", who)
    assert _ok(can).strip() == "yes"
    denied = kubectl(sim_up.kubeconfig, "auth", "can-i", "delete", "computedomains", who)
    assert (denied.returncode, denied.stdout.strip()) == (1, "no")
    _ok(kubectl(sim_up.kubeconfig, "get", "computedomain", "hello"))
    helm("uninstall", "hello", "--wait", "--timeout=90s")
    for kind in ("deployment", "service", "serviceaccount", "role", "rolebinding", "computedomain"):
        gone = kubectl(sim_up.kubeconfig, "get", kind, "hello")
        assert gone.returncode == 1, (kind, gone.stdout)
        assert "NotFound" in gone.stderr, (kind, gone.stderr)
    pods = kubectl(sim_up.kubeconfig, "get", "rs,pods", "-l", "app=hello", "-o", "name")
    assert _ok(pods).strip() == ""


def test_kubectl_reads_openapi_v2_in_protobuf(sim_up: SimUp, control_plane: str) -> None:
    explained = _ok(
        kubectl(sim_up.kubeconfig, "explain", "computedomains.spec", "--output=plaintext-openapiv2")
    )
    assert "KIND:     ComputeDomain" in explained
    assert "channel\t<Object> -required-" in explained
    _ok(kubectl(sim_up.kubeconfig, "apply", "-f", "-", stdin=DEPLOYMENT))
    # A client-side apply of a change: kubectl looks for the patch schema in OpenAPI v3 and,
    # as the embedded server's v3 has none for built-in kinds, in v2.
    changed = DEPLOYMENT.replace("replicas: 2", "replicas: 1")
    applied = kubectl(sim_up.kubeconfig, "-v=6", "apply", "-f", "-", stdin=changed)
    assert applied.returncode == 0, applied.stderr
    if control_plane == "embedded":
        assert '/openapi/v2?timeout=20s" status="200 OK"' in applied.stderr
    assert "deployment.apps/web configured" in applied.stdout
