"""The corpus's interactions through the official Python client (``kubernetes``): typed calls
(create, read, list with selectors and pages, replace, each patch type, server-side apply with
a conflict, delete with each propagation policy, dry run, strict field validation, access
reviews), the custom-objects API, the dynamic client, and a watch (the events after a list)."""

from __future__ import annotations

from typing import Any

import yaml

from .cases import Call, Case, Dynamic, Step, Watch
from .manifests import DEPLOYMENT, crd_ready

CORE = "CoreV1Api"
BATCH = "BatchV1Api"
APPS = "AppsV1Api"
CUSTOM = "CustomObjectsApi"
APPLY = "application/apply-patch+yaml"


def cm(name: str, data: dict[str, str] | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels} if labels else {"name": name}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": data if data is not None else {"a": "1"},
    }


def create_cm(
    name: str, data: dict[str, str] | None = None, setup: bool = True, **labels: str
) -> Call:
    return Call(
        CORE,
        "create_namespaced_config_map",
        {"namespace": "{ns}", "body": cm(name, data, **labels)},
        setup,
    )


def cm_call(method: str, **kwargs: Any) -> Call:
    return Call(CORE, f"{method}_namespaced_config_map", {"namespace": "{ns}", **kwargs})


def job_body() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 5,
                    "containers": [
                        {"name": "main", "image": "busybox", "command": ["sleep", "3600"]}
                    ],
                }
            }
        },
    }


def deployment() -> dict[str, Any]:
    return yaml.safe_load(DEPLOYMENT)  # type: ignore[no-any-return]


WIDGET = {
    "group": "conformance.example.com",
    "version": "v1",
    "namespace": "{ns}",
    "plural": "widgets",
}


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "conformance.example.com/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": spec or {"size": 2}}  # fmt: skip


def case(name: str, category: str, *steps: Step, **extra: Any) -> Case:
    return Case(f"python-{name}", "python", category, steps, **extra)


# The body of a job's delete: what the server answers depends on the policy.
def delete_job(policy: str) -> Call:
    return Call(BATCH, "delete_namespaced_job",
                {"name": "j", "namespace": "{ns}", "propagation_policy": policy})  # fmt: skip


CASES = [
    case("create", "create", create_cm("a", setup=False)),
    case("create-conflict", "create", create_cm("a"), create_cm("a", setup=False)),
    case(
        "create-dry-run",
        "create",
        cm_call("create", body=cm("a"), dry_run="All"),
        cm_call("list", field_selector="metadata.name=a"),
    ),
    case(
        "create-strict-field-validation",
        "create",
        *crd_ready(),
        Call(
            CUSTOM,
            "create_namespaced_custom_object",
            {**WIDGET, "body": widget("w", size=2, bogus=1), "field_validation": "Strict"},
        ),
    ),
    case(
        "create-warn-field-validation",
        "create",
        *crd_ready(),
        Call(
            CUSTOM,
            "create_namespaced_custom_object",
            {**WIDGET, "body": widget("w", size=2, bogus=1), "field_validation": "Warn"},
        ),
    ),
    case("read-not-found", "get", cm_call("read", name="nope")),
    case(
        "list-label-selector",
        "get with selectors",
        create_cm("one", app="a"),
        create_cm("two", app="b"),
        create_cm("three"),
        cm_call("list", label_selector="app in (a,b)"),
    ),
    case(
        "list-field-selector",
        "get with selectors",
        create_cm("one", app="a"),
        create_cm("two", app="b"),
        cm_call("list", field_selector="metadata.name!=one", label_selector="app"),
    ),
    case(
        "list-pages",
        "get",
        create_cm("one", app="a"),
        create_cm("two", app="a"),
        create_cm("three", app="a"),
        cm_call("list", label_selector="app=a", limit=2),
    ),
    case(
        "replace", "replace", create_cm("a"), cm_call("replace", name="a", body=cm("a", {"b": "2"}))
    ),
    case(
        "replace-stale",
        "replace",
        create_cm("a"),
        cm_call(
            "replace", name="a", body={**cm("a"), "metadata": {"name": "a", "resourceVersion": "1"}}
        ),
    ),
    case(
        "patch-merge",
        "patch",
        create_cm("a", {"a": "1", "b": "2"}),
        cm_call(
            "patch",
            name="a",
            body={"data": {"a": None, "c": "3"}},
            _content_type="application/merge-patch+json",
        ),
    ),
    case(
        "patch-strategic",
        "patch",
        Call(
            APPS, "create_namespaced_deployment", {"namespace": "{ns}", "body": deployment()}, True
        ),
        Call(
            APPS,
            "patch_namespaced_deployment",
            {
                "name": "web",
                "namespace": "{ns}",
                "body": {
                    "spec": {
                        "template": {
                            "spec": {"containers": [{"name": "side", "image": "busybox:2"}]}
                        }
                    }
                },
                "_content_type": "application/strategic-merge-patch+json",
            },
        ),
        # the Deployment controller writes status, the revision annotation and their
        # managedFields when it gets to it; an update's FieldsV1 of a built-in kind differs
        # in detail (docs/embedded-apiserver.md#known-differences)
        drop=(
            ("status",),
            ("metadata", "annotations", "deployment.kubernetes.io/revision"),
            ("metadata", "managedFields"),
        ),
    ),
    case(
        "patch-json",
        "patch",
        create_cm("a"),
        cm_call(
            "patch",
            name="a",
            body=[{"op": "replace", "path": "/data/a", "value": "2"}],
            _content_type="application/json-patch+json",
        ),
    ),
    case(
        "apply",
        "apply --server-side",
        cm_call("patch", name="a", body=cm("a"), field_manager="py", _content_type=APPLY),
    ),
    case(
        "apply-conflict",
        "apply --server-side",
        cm_call("patch", name="a", body=cm("a"), field_manager="first", _content_type=APPLY),
        cm_call(
            "patch", name="a", body=cm("a", {"a": "2"}), field_manager="second", _content_type=APPLY
        ),
    ),
    case(
        "apply-without-manager",
        "apply --server-side",
        cm_call("patch", name="a", body=cm("a"), _content_type=APPLY),
    ),
    case("delete", "delete", create_cm("a"), cm_call("delete", name="a")),
    case(
        "delete-foreground",
        "delete",
        create_cm("a"),
        cm_call("delete", name="a", propagation_policy="Foreground"),
    ),
    case(
        "delete-orphan",
        "delete",
        create_cm("a"),
        cm_call("delete", name="a", propagation_policy="Orphan"),
    ),
    case(
        "delete-background",
        "delete",
        Call(BATCH, "create_namespaced_job", {"namespace": "{ns}", "body": job_body()}, True),
        delete_job("Background"),
        drop=(("status",),),
    ),
    case(
        "delete-precondition",
        "delete",
        create_cm("a"),
        cm_call(
            "delete",
            name="a",
            body={"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}},
        ),
    ),
    case(
        "access-review",
        "auth can-i",
        Call(
            "AuthorizationV1Api",
            "create_subject_access_review",
            {
                "body": {
                    "spec": {
                        "user": "alice",
                        "resourceAttributes": {
                            "verb": "get",
                            "resource": "pods",
                            "namespace": "{ns}",
                        },
                    }
                }
            },
        ),
    ),
    case(
        "self-access-review",
        "auth can-i",
        Call(
            "AuthorizationV1Api",
            "create_self_subject_access_review",
            {
                "body": {
                    "spec": {
                        "resourceAttributes": {
                            "verb": "create",
                            "resource": "pods",
                            "namespace": "{ns}",
                        }
                    }
                }
            },
        ),
    ),
    case(
        "custom-object-create",
        "create",
        *crd_ready(),
        Call(CUSTOM, "create_namespaced_custom_object", {**WIDGET, "body": widget("w")}),
        Call(CUSTOM, "get_namespaced_custom_object", {**WIDGET, "name": "w"}),
    ),
    case(
        "custom-object-invalid",
        "create",
        *crd_ready(),
        # one invalid field per call: kube-apiserver orders several as its schema map iterates
        Call(CUSTOM, "create_namespaced_custom_object", {**WIDGET, "body": widget("w", size=0)}),
        Call(
            CUSTOM,
            "create_namespaced_custom_object",
            {**WIDGET, "body": widget("v", size=2, colour="pink")},
        ),
    ),
    case(
        "custom-object-status",
        "patch",
        *crd_ready(),
        Call(CUSTOM, "create_namespaced_custom_object", {**WIDGET, "body": widget("w")}, True),
        Call(
            CUSTOM,
            "patch_namespaced_custom_object_status",
            {**WIDGET, "name": "w", "body": {"status": {"ready": True}}},
        ),
    ),
    case(
        "dynamic-create-and-list",
        "dynamic client",
        *crd_ready(),
        Dynamic(
            "conformance.example.com/v1",
            "Widget",
            "create",
            {"namespace": "{ns}", "body": widget("w", size=5)},
        ),
        Dynamic(
            "conformance.example.com/v1",
            "Widget",
            "get",
            {"namespace": "{ns}", "label_selector": "!missing"},
        ),
    ),
    case(
        "dynamic-apply",
        "dynamic client",
        Dynamic(
            "v1",
            "ConfigMap",
            "server_side_apply",
            {"namespace": "{ns}", "body": cm("a"), "field_manager": "dyn"},
        ),
    ),
    case(
        "dynamic-not-found",
        "dynamic client",
        Dynamic("v1", "ConfigMap", "get", {"namespace": "{ns}", "name": "nope"}),
    ),
    case(
        "watch-events",
        "watch",
        Watch(
            CORE,
            "list_namespaced_config_map",
            {"namespace": "{ns}", "label_selector": "w"},
            then=(
                create_cm("a", setup=False, w="1"),
                cm_call(
                    "patch",
                    name="a",
                    body={"data": {"a": "2"}},
                    _content_type="application/merge-patch+json",
                ),
                cm_call("delete", name="a"),
            ),
            events=3,
        ),
    ),
]
