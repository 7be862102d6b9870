"""The corpus's kubectl interactions: create, apply (client-side and ``--server-side``), patch of
each type, replace, delete with each propagation policy, wait, explain, get with label and field
selectors, ``auth can-i`` with ``--as``. Output as JSON or YAML is compared as data."""

from __future__ import annotations

from typing import Any

from .cases import Case, Refusal, Step, kubectl
from .manifests import CRD, CRD_NAME, DEPLOYMENT, LONG_JOB, configmap, crd_ready, widget

A = configmap("a")
LABELLED = (
    kubectl("create", "-f", "-", stdin=configmap("one", labels="{app: a, tier: web}"), setup=True),
    kubectl("create", "-f", "-", stdin=configmap("two", labels="{app: b, tier: db}"), setup=True),
    kubectl("create", "-f", "-", stdin=configmap("three", labels="{tier: web}"), setup=True),
)
REVISION = ("metadata", "annotations", "deployment.kubernetes.io/revision")
JOB_PODS = "app=long"


def case(name: str, category: str, *steps: Step, **extra: Any) -> Case:
    return Case(f"kubectl-{name}", "kubectl", category, steps, **extra)


CASES = [
    # create
    case(
        "create-configmap",
        "create",
        kubectl("create", "configmap", "a", "--from-literal=k=v"),
        kubectl("get", "configmap", "a", "-o", "json"),
    ),
    case(
        "create-from-stdin",
        "create",
        kubectl(
            "create",
            "-f",
            "-",
            stdin="apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {user: admin}\n",
        ),
        kubectl("get", "secret", "s", "-o", "yaml"),
    ),
    case(
        "create-existing",
        "create",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl("create", "-f", "-", stdin=A),
    ),
    case(
        "create-generate-name",
        "create",
        kubectl(
            "create",
            "-f",
            "-",
            stdin="apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
            "  generateName: gen-\n  labels: {made: here}\n",
        ),
        kubectl("get", "configmaps", "-l", "made=here", "-o", "json"),
        generated=("gen-",),
    ),
    case("create-invalid-name", "create", kubectl("create", "configmap", "Bad_Name")),
    case(
        "create-unknown-field",
        "create",
        kubectl(
            "create",
            "-f",
            "-",
            stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u}\n"
            "data: {a: b}\nspec: {x: 1}\n",
        ),
    ),
    case(
        "create-dry-run-server",
        "create",
        kubectl(
            "create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server", "-o", "json"
        ),
        kubectl("get", "configmap", "dry"),
    ),
    case(
        "create-empty-maps",
        "create",
        kubectl(
            "create",
            "-f",
            "-",
            stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e, "
            "labels: {}, annotations: {}, finalizers: []}\ndata: {}\n",
        ),
        kubectl("get", "configmap", "e", "-o", "json"),
    ),
    case(
        "create-service",
        "create",
        kubectl("create", "service", "clusterip", "web", "--tcp=80:8080"),
        kubectl("get", "service", "web", "-o", "json"),
    ),
    case(
        "create-deployment",
        "create",
        kubectl("create", "deployment", "web", "--image=busybox", "--replicas=0"),
        kubectl("get", "deployment", "web", "-o", "json"),
        # the Deployment controller writes status and the revision annotation when it gets to it
        drop=(("status",), REVISION),
    ),
    case(
        "create-job",
        "create",
        kubectl("create", "job", "quick", "--image=busybox", "--", "sh", "-c", "exit 0"),
        kubectl("get", "job", "quick", "-o", "json"),
        # the Job controller writes status (and its pods) when it gets to it
        drop=(("status",),),
    ),
    case(
        "create-role-and-binding",
        "create",
        kubectl("create", "role", "reader", "--verb=get,list", "--resource=pods,configmaps"),
        kubectl("create", "rolebinding", "reader", "--role=reader", "--user=alice"),
        kubectl("get", "role,rolebinding", "-o", "yaml"),
    ),
    case(
        "create-namespace",
        "create",
        kubectl("create", "namespace", "cf-made-by-kubectl"),
        kubectl("get", "namespace", "cf-made-by-kubectl", "-o", "json"),
    ),
    case(
        "create-custom-resource",
        "create",
        *crd_ready(),
        kubectl("create", "-f", "-", stdin=widget("w")),
        kubectl("get", "widget", "w", "-o", "json"),
    ),
    case(
        "create-custom-resource-invalid",
        "create",
        *crd_ready(),
        kubectl("create", "-f", "-", stdin=widget("w", "{size: 12, colour: red}")),
        kubectl("create", "-f", "-", stdin=widget("v", "{size: 2, colour: pink}")),
        kubectl("create", "-f", "-", stdin=widget("u", "{size: 0}")),
    ),
    # apply, client-side
    case(
        "apply-create",
        "apply",
        kubectl("apply", "-f", "-", stdin=A),
        kubectl("get", "configmap", "a", "-o", "json"),
    ),
    case(
        "apply-unchanged",
        "apply",
        kubectl("apply", "-f", "-", stdin=A, setup=True),
        kubectl("apply", "-f", "-", stdin=A),
    ),
    case(
        "apply-configured",
        "apply",
        kubectl("apply", "-f", "-", stdin=configmap("a", "{a: '1', b: '2'}"), setup=True),
        kubectl("patch", "configmap", "a", "--type=merge", "-p", '{"data":{"c":"3"}}', setup=True),
        kubectl("apply", "-f", "-", stdin=configmap("a", "{a: '9'}")),
        kubectl("get", "configmap", "a", "-o", "json"),
    ),
    case(
        "apply-deployment",
        "apply",
        kubectl("apply", "-f", "-", stdin=DEPLOYMENT, setup=True),
        kubectl(
            "apply",
            "-f",
            "-",
            stdin=DEPLOYMENT.replace('main, image: "busybox:1.36', 'main, image: "busybox:1.37'),
        ),
        kubectl("get", "deployment", "web", "-o", "json"),
        drop=(("status",), REVISION),
    ),
    case(
        "apply-custom-resource",
        "apply",
        *crd_ready(),
        kubectl(
            "apply", "-f", "-", stdin=widget("w", "{size: 3, parts: [{name: bolt, count: 1}]}")
        ),
        kubectl("apply", "-f", "-", stdin=widget("w", "{size: 4, parts: [{name: nut}]}")),
        kubectl("get", "widget", "w", "-o", "yaml"),
    ),
    # apply, server-side
    case(
        "apply-server-side-create",
        "apply --server-side",
        kubectl("apply", "--server-side", "-f", "-", stdin=A),
        kubectl("get", "configmap", "a", "-o", "json", "--show-managed-fields"),
    ),
    case(
        "apply-server-side-conflict",
        "apply --server-side",
        kubectl("apply", "--server-side", "--field-manager=first", "-f", "-", stdin=A, setup=True),
        kubectl(
            "apply",
            "--server-side",
            "--field-manager=second",
            "-f",
            "-",
            stdin=configmap("a", "{a: '2'}"),
        ),
    ),
    case(
        "apply-server-side-force",
        "apply --server-side",
        kubectl("apply", "--server-side", "--field-manager=first", "-f", "-", stdin=A, setup=True),
        kubectl(
            "apply",
            "--server-side",
            "--field-manager=second",
            "--force-conflicts",
            "-f",
            "-",
            stdin=configmap("a", "{a: '2'}"),
        ),
        kubectl("get", "configmap", "a", "-o", "json", "--show-managed-fields"),
    ),
    case(
        "apply-server-side-shared",
        "apply --server-side",
        kubectl(
            "apply",
            "--server-side",
            "--field-manager=first",
            "-f",
            "-",
            stdin=configmap("a", "{a: '1', b: '2'}"),
            setup=True,
        ),
        kubectl(
            "apply",
            "--server-side",
            "--field-manager=second",
            "-f",
            "-",
            stdin=configmap("a", "{a: '1', c: '3'}"),
        ),
        kubectl("apply", "--server-side", "--field-manager=first", "-f", "-", stdin=A),
        kubectl("get", "configmap", "a", "-o", "json", "--show-managed-fields"),
    ),
    case(
        "apply-server-side-drops-field",
        "apply --server-side",
        kubectl(
            "apply",
            "--server-side",
            "-f",
            "-",
            stdin=configmap("a", "{a: '1', b: '2'}"),
            setup=True,
        ),
        kubectl("apply", "--server-side", "-f", "-", stdin=A),
        kubectl("get", "configmap", "a", "-o", "jsonpath={.data}"),
    ),
    case(
        "apply-server-side-custom-resource",
        "apply --server-side",
        *crd_ready(),
        kubectl(
            "apply",
            "--server-side",
            "--field-manager=first",
            "-f",
            "-",
            stdin=widget("w", "{size: 3, parts: [{name: bolt, count: 1}]}"),
        ),
        kubectl(
            "apply",
            "--server-side",
            "--field-manager=second",
            "-f",
            "-",
            stdin=widget("w", "{parts: [{name: nut, count: 2}]}"),
        ),
        kubectl("get", "widget", "w", "-o", "json", "--show-managed-fields"),
    ),
    case(
        "apply-server-side-dry-run",
        "apply --server-side",
        kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", "-o", "yaml", stdin=A),
        kubectl("get", "configmap", "a"),
    ),
    # patch
    case(
        "patch-strategic",
        "patch",
        kubectl("apply", "-f", "-", stdin=DEPLOYMENT, setup=True),
        kubectl(
            "patch",
            "deployment",
            "web",
            "-p",
            '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox:2"}]}}}}',
        ),
        kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers}"),
    ),
    case(
        "patch-strategic-delete-directive",
        "patch",
        kubectl("apply", "-f", "-", stdin=DEPLOYMENT, setup=True),
        kubectl(
            "patch",
            "deployment",
            "web",
            "-p",
            '{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}',
        ),
        kubectl(
            "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[*].name}"
        ),
    ),
    case(
        "patch-merge",
        "patch",
        kubectl("create", "-f", "-", stdin=configmap("a", "{a: '1', b: '2'}"), setup=True),
        kubectl("patch", "configmap", "a", "--type=merge", "-p", '{"data":{"a":null,"c":"3"}}'),
        kubectl("get", "configmap", "a", "-o", "json"),
    ),
    case(
        "patch-json",
        "patch",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl(
            "patch",
            "configmap",
            "a",
            "--type=json",
            "-p",
            '[{"op":"add","path":"/data/b","value":"2"},{"op":"remove","path":"/data/a"}]',
        ),
        kubectl("get", "configmap", "a", "-o", "jsonpath={.data}"),
    ),
    case(
        "patch-json-test-fails",
        "patch",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl(
            "patch",
            "configmap",
            "a",
            "--type=json",
            "-p",
            '[{"op":"test","path":"/data/a","value":"2"}]',
        ),
    ),
    case(
        "patch-no-change",
        "patch",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl("patch", "configmap", "a", "--type=merge", "-p", '{"data":{"a":"1"}}'),
    ),
    case(
        "patch-not-found",
        "patch",
        kubectl("patch", "configmap", "nope", "--type=merge", "-p", '{"data":{"a":"1"}}'),
    ),
    case(
        "patch-status-subresource",
        "patch",
        *crd_ready(),
        kubectl("create", "-f", "-", stdin=widget("w"), setup=True),
        kubectl(
            "patch",
            "widget",
            "w",
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"ready":true},"spec":{"size":5}}',
        ),
        kubectl("get", "widget", "w", "-o", "json"),
    ),
    case(
        "patch-custom-resource-merge",
        "patch",
        *crd_ready(),
        kubectl("create", "-f", "-", stdin=widget("w"), setup=True),
        kubectl("patch", "widget", "w", "--type=merge", "-p", '{"spec":{"colour":"blue"}}'),
        kubectl("patch", "widget", "w", "-p", '{"spec":{"colour":"green"}}'),
        kubectl("get", "widget", "w", "-o", "jsonpath={.spec}"),
    ),
    # replace
    case(
        "replace",
        "replace",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl("replace", "-f", "-", stdin=configmap("a", "{b: '2'}")),
        kubectl("get", "configmap", "a", "-o", "json"),
    ),
    case(
        "replace-stale",
        "replace",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl(
            "replace",
            "-f",
            "-",
            stdin=A.replace("metadata: {", "metadata: {resourceVersion: '1', "),
        ),
    ),
    case(
        "replace-force",
        "replace",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl("replace", "--force", "-f", "-", stdin=configmap("a", "{b: '2'}")),
        kubectl("get", "configmap", "a", "-o", "jsonpath={.data}"),
    ),
    case("replace-missing", "replace", kubectl("replace", "-f", "-", stdin=A)),
    # delete
    case(
        "delete-background",
        "delete",
        kubectl("apply", "-f", "-", stdin=LONG_JOB, setup=True),
        kubectl(
            "wait", "--for=condition=Ready", "pod", "-l", JOB_PODS, "--timeout=60s", setup=True
        ),
        kubectl("delete", "job", "long", "--cascade=background"),
        # kube's garbage collector may be done before the wait starts (then it prints nothing)
        kubectl("wait", "--for=delete", "pod", "-l", JOB_PODS, "--timeout=60s", setup=True),
        kubectl("get", "jobs,pods"),
        generated=("long-",),
    ),
    case(
        "delete-foreground",
        "delete",
        kubectl("apply", "-f", "-", stdin=LONG_JOB, setup=True),
        kubectl(
            "wait", "--for=condition=Ready", "pod", "-l", JOB_PODS, "--timeout=60s", setup=True
        ),
        kubectl("delete", "job", "long", "--cascade=foreground"),
        kubectl("get", "jobs,pods"),
        generated=("long-",),
    ),
    case(
        "delete-orphan",
        "delete",
        kubectl("apply", "-f", "-", stdin=LONG_JOB, setup=True),
        kubectl(
            "wait", "--for=condition=Ready", "pod", "-l", JOB_PODS, "--timeout=60s", setup=True
        ),
        kubectl("delete", "job", "long", "--cascade=orphan"),
        kubectl(
            "get",
            "pods",
            "-l",
            JOB_PODS,
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} owners={.metadata.ownerReferences}{end}",
        ),
        generated=("long-",),
    ),
    case(
        "delete-by-label",
        "delete",
        *LABELLED,
        kubectl("delete", "configmap", "-l", "tier=web"),
        kubectl("get", "configmap", "-l", "tier", "-o", "name"),
    ),
    case(
        "delete-not-found",
        "delete",
        kubectl("delete", "configmap", "nope"),
        kubectl("delete", "configmap", "nope", "--ignore-not-found"),
    ),
    case(
        "delete-dry-run",
        "delete",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl("delete", "configmap", "a", "--dry-run=server"),
        kubectl("get", "configmap", "a", "-o", "name"),
    ),
    # wait
    case(
        "wait-job-complete",
        "wait",
        kubectl("create", "job", "quick", "--image=busybox", "--", "sh", "-c", "exit 0"),
        kubectl("wait", "--for=condition=complete", "job/quick", "--timeout=60s"),
        kubectl(
            "get", "job", "quick", "-o", "jsonpath={.status.succeeded} {.status.conditions[*].type}"
        ),
    ),
    case(
        "wait-jsonpath",
        "wait",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl("wait", "--for=jsonpath={.data.a}=1", "configmap/a", "--timeout=10s"),
    ),
    case(
        "wait-delete",
        "wait",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl("delete", "configmap", "a", "--wait=false", setup=True),
        kubectl("wait", "--for=delete", "configmap/a", "--timeout=10s"),
    ),
    case(
        "wait-timeout",
        "wait",
        kubectl("create", "-f", "-", stdin=A, setup=True),
        kubectl("wait", "--for=condition=Ready", "configmap/a", "--timeout=1s"),
    ),
    case(
        "wait-crd-established",
        "wait",
        kubectl("apply", "--server-side", "-f", "-", stdin=CRD, setup=True),
        kubectl("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=60s"),
        kubectl("get", "crd", CRD_NAME, "-o", "jsonpath={.status.acceptedNames}"),
    ),
    # explain
    case("explain-custom-resource", "explain", *crd_ready(), kubectl("explain", "widgets.spec")),
    case(
        "explain-built-in",
        "explain",
        kubectl("explain", "configmap.data"),
        refused=Refusal(
            0,
            1,
            "not found in OpenAPI schema",
            "the embedded server's OpenAPI v3 documents carry schemas for custom "
            "resources only, so kubectl finds no field descriptions for built-in "
            "kinds and says so",
        ),
    ),
    # get with selectors
    case(
        "get-label-equality",
        "get with selectors",
        *LABELLED,
        kubectl("get", "configmaps", "-l", "app=a", "-o", "name"),
    ),
    case(
        "get-label-set",
        "get with selectors",
        *LABELLED,
        kubectl("get", "configmaps", "-l", "app in (a,b),tier!=db", "-o", "name"),
    ),
    case(
        "get-label-not-exists",
        "get with selectors",
        *LABELLED,
        kubectl("get", "configmaps", "-l", "!app", "-o", "name"),
    ),
    case(
        "get-label-invalid", "get with selectors", kubectl("get", "configmaps", "-l", "app==a==b")
    ),
    case(
        "get-field-name",
        "get with selectors",
        *LABELLED,
        kubectl("get", "configmaps", "--field-selector", "metadata.name=two", "-o", "name"),
    ),
    case(
        "get-field-not-equal",
        "get with selectors",
        *LABELLED,
        kubectl(
            "get",
            "configmaps",
            "--field-selector",
            "metadata.name!=two,metadata.namespace={ns}",
            "-l",
            "tier",
            "-o",
            "name",
        ),
    ),
    case(
        "get-field-unsupported",
        "get with selectors",
        kubectl("get", "configmaps", "--field-selector", "data.a=1"),
    ),
    case(
        "get-pods-field-phase",
        "get with selectors",
        kubectl(
            "create", "job", "quick", "--image=busybox", "--", "sh", "-c", "exit 0", setup=True
        ),
        kubectl("wait", "--for=condition=complete", "job/quick", "--timeout=60s", setup=True),
        kubectl("get", "pods", "--field-selector", "status.phase=Succeeded", "-o", "name"),
        kubectl("get", "pods", "--field-selector", "status.phase=Running", "-o", "name"),
        generated=("quick-",),
    ),
    case(
        "get-table", "get", *LABELLED, kubectl("get", "configmaps", "-l", "tier", "--show-labels")
    ),
    case(
        "get-custom-resource-table",
        "get",
        *crd_ready(),
        kubectl("create", "-f", "-", stdin=widget("w", "{size: 7}"), setup=True),
        kubectl("get", "widgets"),
    ),
    case(
        "get-all-namespaces-selector",
        "get with selectors",
        *LABELLED,
        kubectl(
            "get", "configmaps", "-A", "-l", "app=b", "--field-selector", "metadata.namespace={ns}"
        ),
    ),
    case("get-not-found", "get", kubectl("get", "configmap", "nope")),
    case(
        "get-custom-columns",
        "get",
        *LABELLED,
        kubectl(
            "get",
            "configmaps",
            "-l",
            "tier",
            "--sort-by=.metadata.name",
            "-o",
            "custom-columns=NAME:.metadata.name,APP:.metadata.labels.app",
        ),
    ),
    # ReplicaSets (a Deployment's pods and revisions go through them) and /openapi/v2
    case(
        "get-replicasets",
        "get",
        kubectl("apply", "-f", "-", stdin=DEPLOYMENT, setup=True),
        kubectl("rollout", "status", "deployment/web", "--timeout=60s", setup=True),
        kubectl(
            "get",
            "replicasets",
            "-l",
            "app=web",
            "-o",
            "custom-columns=DESIRED:.spec.replicas,OWNER:.metadata.ownerReferences[0].kind",
        ),
    ),
    case(
        "rollout-history",
        "get",
        kubectl("apply", "-f", "-", stdin=DEPLOYMENT, setup=True),
        kubectl("rollout", "history", "deployment/web"),
    ),
    case(
        "openapi-v2",
        "explain",
        *crd_ready(),
        kubectl("explain", "widgets.spec", "--output=plaintext-openapiv2"),
    ),
    # auth can-i
    case("can-i-admin", "auth can-i", kubectl("auth", "can-i", "create", "pods")),
    case(
        "can-i-as-service-account",
        "auth can-i",
        kubectl("auth", "can-i", "get", "pods", "--as=system:serviceaccount:{ns}:default"),
    ),
    case(
        "can-i-as-bound-user",
        "auth can-i",
        kubectl(
            "create",
            "role",
            "reader",
            "--verb=get",
            "--resource=configmaps",
            "--resource-name=a",
            setup=True,
        ),
        kubectl("create", "rolebinding", "reader", "--role=reader", "--user=alice", setup=True),
        kubectl("auth", "can-i", "get", "configmap/a", "--as=alice"),
        kubectl("auth", "can-i", "get", "configmap/b", "--as=alice"),
        kubectl("auth", "can-i", "list", "configmaps", "--as=alice"),
    ),
    case(
        "can-i-as-group",
        "auth can-i",
        kubectl("auth", "can-i", "delete", "nodes", "--as=bob", "--as-group=system:masters"),
    ),
    case(
        "can-i-subresource",
        "auth can-i",
        kubectl("create", "role", "logs", "--verb=get", "--resource=pods/log", setup=True),
        kubectl("create", "rolebinding", "logs", "--role=logs", "--user=carol", setup=True),
        kubectl("auth", "can-i", "get", "pods", "--subresource=log", "--as=carol"),
        kubectl("auth", "can-i", "get", "pods", "--as=carol"),
    ),
    case(
        "can-i-list",
        "auth can-i",
        kubectl("create", "role", "reader", "--verb=get,list", "--resource=configmaps", setup=True),
        kubectl("create", "rolebinding", "reader", "--role=reader", "--user=dave", setup=True),
        kubectl("auth", "can-i", "--list", "--as=dave"),
    ),
    case("as-forbidden", "auth can-i", kubectl("get", "configmaps", "--as=nobody")),
]
