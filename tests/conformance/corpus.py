"""The whole corpus, in the order it runs: kubectl's cases, helm's, the Python client's,
client-go's. What kube-apiserver answered to each is in ``golden.json``
(``make conformance-record``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from . import corpus_clientgo, corpus_helm, corpus_kubectl, corpus_python
from .cases import Case

GOLDEN = Path(__file__).parent / "golden.json"

# The cases that differed when the corpus was first run, and the fix that made them identical.
_APPLY_FIELDS = "an Apply's managedFields own the leaves and list items applied, not their maps"
_CR_UPDATE = "an update owns a custom resource's objects (spec, status) themselves in managedFields"
_LIST_ITEMS = "a built-in kind's list items carry no apiVersion and kind"
_NO_GROUP = "a deleted core object's Status names no empty group"
_ZEROS = "zero values of fields Go omits when empty are dropped"
_NO_LINKS = "pod templates get no enableServiceLinks default"
FIXED: dict[str, str] = {
    "kubectl-get-replicasets": "apps/v1 ReplicaSets with a ReplicaSet controller; Deployments "
    "roll out through them (pod-template-hash, revisions), as kube-controller-manager's do",
    "kubectl-rollout-history": "a Deployment's revisions are its ReplicaSets' revision "
    "annotations, as kube-controller-manager writes them",
    "kubectl-openapi-v2": "/openapi/v2 is served (JSON, and gnostic's protobuf for client-go), "
    "with CRD schemas in kube's v2 form and metadata as a reference to ObjectMeta",
    "kubectl-create-from-stdin": "a Secret's stringData is merged into data",
    "kubectl-create-unknown-field": "built-in kinds' unknown fields: Strict refuses, else dropped",
    "kubectl-create-empty-maps": "empty labels, annotations and finalizers are dropped",
    "kubectl-create-deployment": f"{_ZEROS}; {_NO_LINKS}",
    "kubectl-create-service": _ZEROS,
    "kubectl-create-job": "a Job without labels gets its pod template's",
    "kubectl-apply-deployment": _NO_LINKS,
    "kubectl-apply-server-side-create": _APPLY_FIELDS,
    "kubectl-apply-server-side-shared": _APPLY_FIELDS,
    "kubectl-apply-server-side-custom-resource": _APPLY_FIELDS,
    "kubectl-apply-server-side-force": f"{_APPLY_FIELDS}, so a manager left with none goes",
    "kubectl-patch-json-test-fails": "kube-apiserver's message for a failed JSON patch test",
    "kubectl-delete-dry-run": "dryRun is read from the DeleteOptions body too",
    "kubectl-get-label-not-exists": "every namespace gets kube-root-ca.crt (root CA publisher)",
    "kubectl-get-field-unsupported": "kube-apiserver's message for an unknown field selector",
    "kubectl-can-i-list": "SelfSubjectRulesReview is served",
    "helm-install": _NO_LINKS,
    "helm-upgrade-server-side": f"{_APPLY_FIELDS}; a LabelSelector is owned whole",
    "python-apply": _APPLY_FIELDS,
    "python-apply-conflict": _APPLY_FIELDS,
    "python-dynamic-apply": _APPLY_FIELDS,
    "python-apply-without-manager": "the 422's cause is FieldValueRequired, with no empty name",
    "python-create-warn-field-validation": _CR_UPDATE,
    "python-custom-object-create": _CR_UPDATE,
    "python-custom-object-status": _CR_UPDATE,
    "python-dynamic-create-and-list": f"{_CR_UPDATE}; a custom list says continue when empty",
    "python-list-label-selector": _LIST_ITEMS,
    "python-list-field-selector": _LIST_ITEMS,
    "python-list-pages": _LIST_ITEMS,
    "python-delete": _NO_GROUP,
    "python-watch-events": _NO_GROUP,
    "python-delete-precondition": "kube-apiserver's 409 for a failed precondition",
    "python-access-review": "reviews carry managedFields",
    "python-self-access-review": "reviews carry managedFields; no reason for system:masters",
    "clientgo-typed-daemonset": "a DaemonSet's template generation annotation (1, then one more "
    "for each pod template change)",
    "clientgo-typed-resourceclaimtemplate": "resource.k8s.io/v1 device requests default to "
    "allocationMode ExactCount and count 1",
    "clientgo-typed-service": "a Service's port defaults its targetPort when a protobuf body "
    "carries it as 0; the creator owns neither the allocated IPs nor the IP families; the "
    "selector is owned whole; the ports are keyed by port and protocol",
    "clientgo-dynamic-configmap": "a failed JSON patch test's 422 carries empty details, as "
    "kube-apiserver's generic response does",
    "clientgo-watch-expired": "a custom resource's event history starts when its CRD is served, "
    "as kube-apiserver's watch cache does: a watch from an older resourceVersion is 410 Expired",
}

CASES: list[Case] = [
    attrs.evolve(c, fixed=FIXED[c.name]) if c.name in FIXED else c
    for c in (
        *corpus_kubectl.CASES,
        *corpus_helm.CASES,
        *corpus_python.CASES,
        *corpus_clientgo.CASES,
    )
]
BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES), "two cases share a name"
assert set(FIXED) <= set(BY_NAME), f"fixes of unknown cases: {set(FIXED) - set(BY_NAME)}"


def golden() -> dict[str, Any]:
    """kube-apiserver's results by case name (empty before the first recording)."""
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def write_golden(results: dict[str, Any]) -> None:
    """Record ``results`` over the golden file's (cases not run keep theirs), in corpus order."""
    merged = {**golden(), **results}
    ordered = {c.name: _sorted(merged[c.name]) for c in CASES if c.name in merged}
    GOLDEN.write_text(json.dumps(ordered, indent=1) + "\n")


def _sorted(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True))
