"""The corpus's helm interactions: install, upgrade, rollback and uninstall of ``charts/app``
(a Deployment, a Service, a ServiceAccount, a Role and RoleBinding, a ClusterRole, and a CRD in
``crds/``), plus the variants an operator meets (upgrade --install, a server dry run, a name in
use). What the release made is read back with kubectl."""

from __future__ import annotations

from .cases import Case, Step, helm, kubectl

CHART = "{charts}/app"
MADE = "deployment,service,serviceaccount,role,rolebinding"
OURS = "app.kubernetes.io/instance=app"
# The Deployment controller writes status and the revision annotation when it gets to it.
DROP = (("status",), ("metadata", "annotations", "deployment.kubernetes.io/revision"))
ENV = "jsonpath={.spec.template.spec.containers[0].env}"
CLUSTER_ROLE = "clusterrole/{ns}-app-nodes"


def case(name: str, *steps: Step, category: str = "") -> Case:
    category = category or name.split("-", maxsplit=1)[0]
    return Case(f"helm-{name}", "helm", category, steps, drop=DROP)


INSTALLED = helm("install", "app", CHART, setup=True)

CASES = [
    case(
        "install",
        helm("install", "app", CHART),
        kubectl("get", MADE, "-l", OURS, "-o", "json"),
        kubectl("get", CLUSTER_ROLE, "-o", "json"),
        helm("list", "-o", "json"),
    ),
    case(
        "install-crd",
        helm("install", "app", CHART),
        kubectl("wait", "--for=condition=Established", "crd/gadgets.conformance.example.com"),
        kubectl("get", "crd", "gadgets.conformance.example.com", "-o", "jsonpath={.spec}"),
        category="install",
    ),
    case(
        "upgrade",
        INSTALLED,
        helm("upgrade", "app", CHART, "--set=greeting=bye"),
        kubectl("get", "deployment", "app-web", "-o", ENV),
        kubectl("get", "deployment", "app-web", "-o", "jsonpath={.metadata.generation}"),
        helm("history", "app", "-o", "json"),
    ),
    case(
        "upgrade-server-side",
        INSTALLED,
        helm("upgrade", "app", CHART, "--set=replicas=0,greeting=bye", "--server-side=true"),
        kubectl("get", "deployment", "app-web", "-o", "json"),
        # helm's own entry: the Deployment controller's entry is written when it gets to it
        kubectl(
            "get",
            "deployment",
            "app-web",
            "-o",
            'jsonpath={.metadata.managedFields[?(@.manager=="helm")].fieldsV1}',
        ),
        category="upgrade",
    ),
    case(
        "upgrade-install",
        helm("upgrade", "--install", "app", CHART),
        helm("get", "manifest", "app"),
        category="upgrade",
    ),
    case(
        "rollback",
        INSTALLED,
        helm("upgrade", "app", CHART, "--set=greeting=bye", setup=True),
        helm("rollback", "app", "1"),
        kubectl("get", "deployment", "app-web", "-o", ENV),
        helm("history", "app", "-o", "json"),
    ),
    case("rollback-missing-revision", INSTALLED, helm("rollback", "app", "7"), category="rollback"),
    case(
        "uninstall",
        INSTALLED,
        helm("uninstall", "app"),
        kubectl("get", f"{MADE},secrets", "-l", OURS),
        kubectl("get", CLUSTER_ROLE, "--ignore-not-found"),
        helm("list", "-o", "json"),
    ),
    case(
        "install-dry-run-server",
        helm("install", "app", CHART, "--dry-run=server"),
        helm("list", "-o", "json"),
        category="install",
    ),
    case("install-name-in-use", INSTALLED, helm("install", "app", CHART), category="install"),
]
