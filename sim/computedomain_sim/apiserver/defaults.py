"""Defaulting of built-in kinds: the values kube-apiserver fills in on create and update, so
that typed clients (the kubernetes package's strict models) and kubectl see what they would see
on a real cluster (e.g. a DaemonSet's zero status counters, a Pod's ``Pending`` phase).

Called by :mod:`.writes` through :func:`apply_defaults`; mutates the given dict in place and is
idempotent. Only the fields our components, the typed client and kubectl rely on are filled.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]


def _container(c: Any) -> None:
    if not isinstance(c, dict):
        return
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in c:
        image = str(c.get("image", ""))
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    c.setdefault("resources", {})
    for port in c.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def pod_spec(spec: Any, *, template: bool = False) -> None:
    """Default a PodSpec (also used inside DaemonSet/Deployment templates, which
    kube-apiserver leaves without ``enableServiceLinks``)."""
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    if not template:
        spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            _container(c)
    if "serviceAccountName" in spec:
        spec.setdefault("serviceAccount", spec["serviceAccountName"])


def _template(obj: Obj) -> None:
    tpl = (obj.get("spec") or {}).get("template")
    if isinstance(tpl, dict):
        pod_spec(tpl.get("spec"), template=True)


def pod(obj: Obj, create: bool) -> None:
    spec = obj.get("spec")
    pod_spec(spec)
    if isinstance(spec, dict):
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("priority", 0)
    if create:
        obj["status"] = {"phase": "Pending", "qosClass": _qos(spec)}


def _qos(spec: Any) -> str:
    containers = (spec or {}).get("containers") or [] if isinstance(spec, dict) else []
    any_resources = False
    for c in containers:
        res = c.get("resources") if isinstance(c, dict) else None
        if isinstance(res, dict) and (res.get("requests") or res.get("limits")):
            any_resources = True
    return "Burstable" if any_resources else "BestEffort"


def daemonset(obj: Obj, create: bool) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("revisionHistoryLimit", 10)
        strategy = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
        if isinstance(strategy, dict) and strategy.get("type", "RollingUpdate") == "RollingUpdate":
            strategy.setdefault("type", "RollingUpdate")
            strategy.setdefault("rollingUpdate", {"maxUnavailable": 1, "maxSurge": 0})
    _template(obj)
    if create or not isinstance(obj.get("status"), dict):
        obj["status"] = {}
    st = obj["status"]
    for field in (
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
    ):
        st.setdefault(field, 0)


TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def daemonset_template_generation(obj: Obj, old: Obj | None) -> None:
    """The annotation apps/v1 carries a DaemonSet's template generation in: 1 on create (or
    what the client set), one more on an update that changes the pod template, as kube's
    DaemonSet strategy counts it."""
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return
    if old is None:
        generation = max(_int((meta.get("annotations") or {}).get(TEMPLATE_GENERATION)), 1)
    else:
        generation = _int(((old.get("metadata") or {}).get("annotations") or {}).get(
            TEMPLATE_GENERATION))  # fmt: skip
        if (obj.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[TEMPLATE_GENERATION] = str(generation)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def deployment(obj: Obj, create: bool) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
        if isinstance(strategy, dict) and strategy.get("type", "RollingUpdate") == "RollingUpdate":
            strategy.setdefault("type", "RollingUpdate")
            strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
    _template(obj)
    if create:
        obj["status"] = {}


def replicaset(obj: Obj, create: bool) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("replicas", 1)
    _template(obj)
    if create:
        obj["status"] = {"replicas": 0}


def namespace(obj: Obj, create: bool) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and create:
        spec.setdefault("finalizers", ["kubernetes"])
    if create:
        obj["status"] = {"phase": "Active"}
    meta = obj.get("metadata") or {}
    labels = meta.setdefault("labels", {})
    if isinstance(labels, dict):
        labels["kubernetes.io/metadata.name"] = meta.get("name", "")


def secret(obj: Obj, create: bool) -> None:
    """``stringData`` is write-only: merged into ``data`` (base64), as kube-apiserver does."""
    obj.setdefault("type", "Opaque")
    strings = obj.pop("stringData", None)
    if isinstance(strings, dict) and strings:
        current = obj.get("data")
        data: dict[str, Any] = current if isinstance(current, dict) else {}
        for key, value in strings.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


def crd(obj: Obj, create: bool) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})


def statefulset(obj: Obj, create: bool) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault(
        "persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"}
    )
    _template(obj)


JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")


def job(obj: Obj, create: bool) -> None:
    """A Job's defaults and, unless ``spec.manualSelector``, its generated selector: the Job's
    uid as a label of its pod template, as kube-apiserver's Job strategy adds on create."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    spec.setdefault("manualSelector", False)
    template = spec.setdefault("template", {})
    if not isinstance(template, dict):
        return
    pod_spec(template.get("spec"), template=True)
    meta = obj.get("metadata") or {}
    if create and not spec.get("manualSelector") and meta.get("uid"):
        template_meta = template.get("metadata")
        if not isinstance(template_meta, dict):
            template_meta = template["metadata"] = {}
        labels = template_meta.get("labels")
        if not isinstance(labels, dict):
            labels = template_meta["labels"] = {}
        for key in JOB_UID_LABELS:
            labels[key] = meta["uid"]
        for key in JOB_NAME_LABELS:
            labels[key] = meta.get("name", "")
        spec["selector"] = {"matchLabels": {JOB_UID_LABELS[0]: meta["uid"]}}
    if create and not meta.get("labels"):
        # kube-apiserver labels a Job without labels with its pod template's
        template_labels = (template.get("metadata") or {}).get("labels")
        if isinstance(template_labels, dict) and template_labels and isinstance(meta, dict):
            meta["labels"] = dict(template_labels)


def node(obj: Obj, create: bool) -> None:
    obj.setdefault("spec", {})


def resourceclaim(obj: Obj, create: bool) -> None:
    if create:
        obj.pop("status", None)
    device_requests(obj.get("spec"))


def resourceclaimtemplate(obj: Obj, create: bool) -> None:
    device_requests((obj.get("spec") or {}).get("spec"))


def device_requests(claim_spec: Any) -> None:
    """resource.k8s.io/v1's request defaults: allocationMode ExactCount, and then count 1, for
    an exact request and each first-available subrequest."""
    devices = claim_spec.get("devices") if isinstance(claim_spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else ():
        if not isinstance(request, dict):
            continue
        exact = request.get("exactly")
        subrequests = request.get("firstAvailable")
        for each in [exact, *(subrequests if isinstance(subrequests, list) else ())]:
            if isinstance(each, dict):
                each.setdefault("allocationMode", "ExactCount")
                if each["allocationMode"] == "ExactCount" and not each.get("count"):
                    each["count"] = 1


_BY_KIND: dict[tuple[str, str], Callable[[Obj, bool], None]] = {
    ("", "Pod"): pod,
    ("apps", "DaemonSet"): daemonset,
    ("apps", "Deployment"): deployment,
    ("apps", "ReplicaSet"): replicaset,
    ("apps", "StatefulSet"): statefulset,
    ("batch", "Job"): job,
    ("", "Namespace"): namespace,
    ("", "Secret"): secret,
    ("", "Node"): node,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): crd,
    ("resource.k8s.io", "ResourceClaim"): resourceclaim,
    ("resource.k8s.io", "ResourceClaimTemplate"): resourceclaimtemplate,
}


def apply_defaults(group: str, kind: str, obj: Obj, *, create: bool) -> None:
    """Fill in a built-in kind's defaults in place; a no-op for other kinds."""
    fn = _BY_KIND.get((group, kind))
    if fn is not None:
        fn(obj, create)
