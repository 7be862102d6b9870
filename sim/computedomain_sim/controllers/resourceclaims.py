"""The resourceclaim controller's decisions: claims for pods from templates, and releasing
claims no pod uses any more.

Called by :mod:`.resourceclaim_controller` with informer snapshots. Pure.

For every ``spec.resourceClaims[]`` entry of a pod that names a ``resourceClaimTemplateName``,
a ResourceClaim is made from the template, named ``<pod>-<podClaimName>-<suffix>`` in the pod's
namespace, with a controller ownerReference to the pod (so it goes when the pod goes) and the
annotation ``resource.kubernetes.io/pod-claim-name``; the pod's
``status.resourceClaimStatuses`` records the name. An existing claim with that annotation and
owner is adopted instead of making a second one (a lost status write). A claim whose
``status.reservedFor`` names pods that are gone or finished loses them; once nobody reserves it,
its allocation is cleared and the scheduler's finalizer removed. As in kube-controller-manager,
that happens on the way from used to unused, or once the claim is being deleted: never to a
live claim that nobody has reserved yet, such as one the scheduler has just put its finalizer on
and is about to allocate (taking it off then would make the scheduler's status write and ours
conflict).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from computedomain.api import jsoncodec

from . import names

__all__ = [
    "POD_CLAIM_NAME_ANNOTATION",
    "PROTECTION_FINALIZER",
    "ClaimRelease",
    "PodClaims",
    "claims_for_pod",
    "release",
]

Obj = Mapping[str, Any]
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"


@attrs.frozen
class PodClaims:
    """Claims to create for a pod, and its ``status.resourceClaimStatuses`` afterwards.

    ``statuses`` maps a pod claim name to the claim name; ``missing_templates`` lists templates
    that do not exist (the pod waits; kube-scheduler reports it).
    """

    creates: tuple[dict[str, Any], ...]
    statuses: tuple[tuple[str, str], ...]
    missing_templates: tuple[str, ...]


@attrs.frozen
class ClaimRelease:
    """The new ``status`` of a claim (reservedFor pruned, maybe deallocated) and whether to drop
    the delete-protection finalizer."""

    status: dict[str, Any]
    remove_finalizer: bool


def claims_for_pod(
    pod: Obj,
    templates: Mapping[str, Obj],
    existing: Sequence[Obj],
    suffixes: Mapping[str, str],
) -> PodClaims:
    """The claims to create for ``pod``. Pure.

    ``templates``: name -> ResourceClaimTemplate in the pod's namespace; ``existing``: claims in
    the namespace owned by the pod; ``suffixes``: pod claim name -> random suffix to use.
    """
    meta = pod.get("metadata") or {}
    recorded = {
        s["name"]: s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    owned = {
        (c["metadata"].get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION): c["metadata"][
            "name"
        ]
        for c in existing
        if _owned_by(c, str(meta.get("uid", "")))
    }
    creates: list[dict[str, Any]] = []
    statuses: list[tuple[str, str]] = []
    missing: list[str] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        pod_claim = entry.get("name", "")
        template_name = entry.get("resourceClaimTemplateName")
        if not template_name:
            continue  # a claim named directly by resourceClaimName: nothing to generate
        if recorded.get(pod_claim):
            statuses.append((pod_claim, str(recorded[pod_claim])))
            continue
        if pod_claim in owned:
            statuses.append((pod_claim, str(owned[pod_claim])))
            continue
        template = templates.get(template_name)
        if template is None:
            missing.append(template_name)
            continue
        name = names.with_suffix(f"{meta.get('name', '')}-{pod_claim}-", suffixes[pod_claim])
        creates.append(_claim(pod, pod_claim, name, template))
        statuses.append((pod_claim, name))
    return PodClaims(tuple(creates), tuple(statuses), tuple(missing))


def release(claim: Obj, live_pods: Mapping[str, Obj]) -> ClaimRelease | None:
    """Prune ``status.reservedFor`` of pods not in ``live_pods`` (uid -> pod) or finished, and
    deallocate when the last one left, or when nobody is left and the claim is being deleted
    (module docstring). ``None`` if nothing changes. Pure."""
    meta = claim.get("metadata") or {}
    status = dict(claim.get("status") or {})
    reserved = list(status.get("reservedFor") or [])
    keep = [r for r in reserved if _still_uses(r, live_pods)]
    protected = PROTECTION_FINALIZER in (meta.get("finalizers") or [])
    if len(keep) == len(reserved) and not (
        not keep and protected and meta.get("deletionTimestamp")
    ):
        return None
    if keep:
        status["reservedFor"] = keep
    else:
        status.pop("reservedFor", None)
        status.pop("allocation", None)
    return ClaimRelease(status, remove_finalizer=not keep and protected)


def _still_uses(reference: Obj, live_pods: Mapping[str, Obj]) -> bool:
    if reference.get("resource") != "pods":
        return True  # someone else's reservation: not ours to judge
    pod = live_pods.get(str(reference.get("uid", "")))
    if pod is None:
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _owned_by(obj: Obj, uid: str) -> bool:
    return any(
        ref.get("uid") == uid and ref.get("controller")
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
    )


def _claim(pod: Obj, pod_claim: str, name: str, template: Obj) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    tmeta = (template.get("spec") or {}).get("metadata") or {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace", "default"),
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": {
                **(tmeta.get("annotations") or {}),
                POD_CLAIM_NAME_ANNOTATION: pod_claim,
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta.get("name", ""),
                    "uid": meta.get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": jsoncodec.copy(dict((template.get("spec") or {}).get("spec") or {})),
    }
