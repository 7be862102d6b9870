"""The objects the controller creates for a ComputeDomain, rendered as API JSON.

Three renderers, each a pure function of the domain and the :class:`DaemonSettings`:
the daemon ResourceClaimTemplate and the daemon DaemonSet (both ``computedomain-daemon-<uid>``
in the driver namespace) and the workload ResourceClaimTemplate (named by the domain's spec, in
the domain's namespace). The shapes are upstream's field for field
(docs/compatibility.md#objects-the-controller-renders,
resource.k8s.io/v1 and apps/v1), because the kubelet plugin, the daemon and the DeviceClasses
consume them; our additions (priority class, resources, the daemons' policies and their
settings) are absent unless configured. No
ownerReferences: lifecycles hang on labels and finalizers, as upstream's do.

Called by :mod:`computedomain.controller.planning`; calls nothing but the api layer.
"""

from __future__ import annotations

from typing import Any, Final

from computedomain.api import names
from computedomain.api.models import AllocationMode, ComputeDomain
from computedomain.controller.config import DaemonSettings
from computedomain.controller.settingvalues import ENV_DNS_NAME_POLICY, ENV_INDEX_POLICY

RESOURCE_API_VERSION: Final = "resource.k8s.io/v1"
APPS_API_VERSION: Final = "apps/v1"

# Probe timings of upstream's daemon DaemonSet, in order of the fields.
STARTUP_PROBE: Final = {
    "initialDelaySeconds": 0,
    "periodSeconds": 1,
    "timeoutSeconds": 10,
    "failureThreshold": 1200,  # 20 minutes at 1 s: a slow start never kills the daemon
    "successThreshold": 1,
}
LIVENESS_PROBE: Final = {
    "periodSeconds": 60,
    "timeoutSeconds": 10,
    "failureThreshold": 20,
    "successThreshold": 1,
}
READINESS_PROBE: Final = {
    "periodSeconds": 10,
    "timeoutSeconds": 10,
    "failureThreshold": 1,
    "successThreshold": 1,
}
# Match every taint: a daemon must run wherever the workload's node is (upstream #305).
TOLERATIONS: Final = (
    {"operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists", "effect": "NoExecute"},
    {"operator": "Exists", "effect": "PreferNoSchedule"},
)
# The daemon pod's resolver: a name that is not in the hosts file is tried once, as absolute,
# before any search domain (upstream since 2026-09; the hosts file names every slot anyway,
# docs/compatibility.md#hosts-file-slots-ndots-and-daemon-dns-names).
DNS_CONFIG: Final = {"options": ({"name": "ndots", "value": "1"},)}
_DOWNWARD_ENV: Final = (
    (names.ENV_NODE_NAME, "spec.nodeName"),
    (names.ENV_POD_IP, "status.podIP"),
    (names.ENV_POD_UID, "metadata.uid"),
    (names.ENV_POD_NAME, "metadata.name"),
    (names.ENV_POD_NAMESPACE, "metadata.namespace"),
)


def _metadata(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "finalizers": [names.FINALIZER],
    }


def _claim_template(
    *,
    name: str,
    namespace: str,
    uid: str,
    target: str,
    request: str,
    device_class: str,
    parameters: dict[str, Any],
) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": _metadata(
            name, namespace, {names.COMPUTE_DOMAIN_LABEL: uid, names.TARGET_LABEL: target}
        ),
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": request, "exactly": {"deviceClassName": device_class}}],
                    "config": [
                        {
                            "requests": [request],
                            "opaque": {"driver": names.DRIVER_NAME, "parameters": parameters},
                        }
                    ],
                }
            }
        },
    }


def daemon_claim_template(domain: ComputeDomain, settings: DaemonSettings) -> dict[str, Any]:
    """The daemon ResourceClaimTemplate. Pure."""
    uid = domain.metadata.uid
    return _claim_template(
        name=names.daemon_object_name(uid),
        namespace=settings.namespace,
        uid=uid,
        target=names.TARGET_DAEMON,
        request=names.DAEMON_REQUEST,
        device_class=names.DAEMON_DEVICE_CLASS,
        parameters={
            "apiVersion": names.GROUP_VERSION,
            "kind": names.DAEMON_CONFIG_KIND,
            "domainID": uid,
        },
    )


def workload_claim_template(domain: ComputeDomain, *, single: bool = False) -> dict[str, Any]:
    """The workload ResourceClaimTemplate users' pods reference. Pure.

    ``allocationMode`` is always present; an absent mode renders as ``Single``, the CRD default.
    ``single``: always ``Single`` (host-managed IMEX hands out channel 0 only, as upstream).
    """
    mode = AllocationMode.SINGLE if single else domain.spec.channel.effective_allocation_mode
    uid = domain.metadata.uid
    return _claim_template(
        name=domain.spec.channel.resource_claim_template.name,
        namespace=domain.metadata.namespace,
        uid=uid,
        target=names.TARGET_WORKLOAD,
        request=names.CHANNEL_REQUEST,
        device_class=names.CHANNEL_DEVICE_CLASS,
        parameters={
            "apiVersion": names.GROUP_VERSION,
            "kind": names.CHANNEL_CONFIG_KIND,
            "domainID": uid,
            "allocationMode": str(mode),
        },
    )


def daemon_command(settings: DaemonSettings, subcommand: str) -> list[str]:
    """``<daemon> -v $(LOG_VERBOSITY) <subcommand>``; the kubelet expands ``$(LOG_VERBOSITY)``."""
    return [settings.command, "-v", f"$({names.ENV_LOG_VERBOSITY})", subcommand]


def _probe(settings: DaemonSettings, timings: dict[str, int]) -> dict[str, Any]:
    return {"exec": {"command": daemon_command(settings, "check")}, **timings}


def _env(settings: DaemonSettings) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": names.ENV_LOG_VERBOSITY, "value": str(settings.log_verbosity)},
        {
            "name": names.ENV_MAX_NODES_PER_IMEX_DOMAIN,
            "value": str(settings.max_nodes_per_imex_domain),
        },
    ]
    env.extend(
        {"name": var, "valueFrom": {"fieldRef": {"fieldPath": path}}} for var, path in _DOWNWARD_ENV
    )
    env.append({"name": names.ENV_NVIDIA_VISIBLE_DEVICES, "value": "void"})
    if settings.feature_gates:
        env.append({"name": names.ENV_FEATURE_GATES, "value": settings.feature_gates})
    if settings.index_policy:
        env.append({"name": ENV_INDEX_POLICY, "value": settings.index_policy})
    if settings.dns_name_policy:
        env.append({"name": ENV_DNS_NAME_POLICY, "value": settings.dns_name_policy})
    env.extend({"name": name, "value": value} for name, value in settings.policy_env)
    return env


def daemon_set(domain: ComputeDomain, settings: DaemonSettings) -> dict[str, Any]:
    """The per-domain daemon DaemonSet. Pure.

    Its nodeSelector is the domain label, so it schedules a daemon only on nodes the kubelet
    plugin labelled while preparing a channel claim of this domain.
    """
    uid = domain.metadata.uid
    selector = {names.COMPUTE_DOMAIN_LABEL: uid}
    resources: dict[str, Any] = {
        section: dict(values) for section, values in settings.resources.items() if values
    }
    resources["claims"] = [{"name": names.DAEMON_POD_CLAIM}]
    container = {
        "name": names.DAEMON_CONTAINER,
        "image": settings.image,
        "command": daemon_command(settings, "run"),
        "env": _env(settings),
        "resources": resources,
        "startupProbe": _probe(settings, STARTUP_PROBE),
        "livenessProbe": _probe(settings, LIVENESS_PROBE),
        "readinessProbe": _probe(settings, READINESS_PROBE),
    }
    pod_spec: dict[str, Any] = {}
    if settings.priority_class_name:
        pod_spec["priorityClassName"] = settings.priority_class_name
    pod_spec["serviceAccountName"] = names.DAEMON_SERVICE_ACCOUNT
    if settings.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in settings.image_pull_secrets]
    pod_spec["nodeSelector"] = dict(selector)
    pod_spec["containers"] = [container]
    pod_spec["tolerations"] = [dict(t) for t in TOLERATIONS]
    pod_spec["dnsConfig"] = {"options": [dict(o) for o in DNS_CONFIG["options"]]}
    pod_spec["resourceClaims"] = [
        {
            "name": names.DAEMON_POD_CLAIM,
            "resourceClaimTemplateName": names.daemon_object_name(uid),
        }
    ]
    return {
        "apiVersion": APPS_API_VERSION,
        "kind": "DaemonSet",
        "metadata": _metadata(names.daemon_object_name(uid), settings.namespace, dict(selector)),
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            "template": {"metadata": {"labels": dict(selector)}, "spec": pod_spec},
        },
    }
