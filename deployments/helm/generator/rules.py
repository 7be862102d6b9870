"""Which fields of the kustomize base the chart's values set, object by object.

Each rule takes one object of ``deployments/base`` and puts :mod:`emit` markers where a value of
``values.yaml`` applies (the value's default is the base's own field, which the chart tests
check by rendering both). A rule looks its fields up by name (env entries, containers, volumes)
and raises :class:`BaseChanged` when the base no longer has the field it parameterises, so a
change to the base cannot silently leave the chart behind.

Names stay fixed (no ``fullnameOverride``): the DeviceClasses, the daemons' service account and
the admission policy are cluster-wide, so there is one install per cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from emit import Expr, Lines, Optional

__all__ = ["NAMESPACE", "BaseChanged", "Rule", "parameterise"]

Obj = dict[str, Any]
Rule = Callable[[Obj], Obj]

NAMESPACE = "computedomain-system"
IMAGE = 'include "computedomain.image" . | quote'
CONTROLLER = ".Values.controller"
PLUGIN = ".Values.kubeletPlugin"
PLUGIN_CONTAINER = f"{PLUGIN}.containers.computeDomains"
CONTROLLER_CONTAINER = f"{CONTROLLER}.containers.computeDomain"
HEALTHCHECK_ON = f"gt (int {PLUGIN_CONTAINER}.healthcheckPort) 0"
CLIQUE_LABEL_ON = f"{PLUGIN_CONTAINER}.gpuCliqueLabelEnabled"
IMEX = ".Values.resources.computeDomains.imex"
# The validated mode (computedomain.imexMode fails the render on a bad one) and the isolation
# as given: the programs read an empty one as domain.
IMEX_MODE = 'include "computedomain.imexMode" . | quote'
IMEX_ISOLATION = f'{IMEX}.isolation | default "" | quote'
HOST_MANAGED = 'include "computedomain.hostManagedIMEX" .'


class BaseChanged(ValueError):
    """The base lacks a field the chart parameterises; the message names it."""


def parameterise(obj: Obj) -> tuple[Obj, str | None]:
    """The object with its markers, and the condition under which the chart renders it (None:
    always). Pure."""
    key = (obj["kind"], obj["metadata"]["name"])
    out = _namespaced(copy.deepcopy(obj))
    meta = out["metadata"]
    meta["labels"] = {
        **meta.get("labels", {}),
        "(release labels)": Lines(('{{- include "computedomain.labels" . | nindent @N }}',)),
    }
    rule = _RULES.get(key)
    if rule is not None:
        out = rule(out)
    return out, _CONDITIONS.get(key)


def _namespaced(value: Any) -> Any:
    """Every mention of the driver namespace becomes the ``namespace.name`` value."""
    if isinstance(value, dict):
        return {k: _namespaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_namespaced(v) for v in value]
    if isinstance(value, str) and NAMESPACE in value:
        return value.replace(NAMESPACE, "{{ .Values.namespace.name }}")
    return value


def _find(items: list[Obj], name: str, where: str) -> Obj:
    for item in items:
        if item.get("name") == name:
            return item
    msg = f"{where}: no entry named {name!r} (the chart parameterises it)"
    raise BaseChanged(msg)


def _set(env: list[Obj], name: str, expr: str, where: str) -> None:
    entry = _find(env, name, f"{where} env")
    if "value" not in entry:
        msg = f"{where} env {name}: expected a plain value"
        raise BaseChanged(msg)
    entry["value"] = Expr(expr)


def _port(entry: Obj, number: int, expr: str, where: str) -> None:
    key = "containerPort" if "containerPort" in entry else "port"
    if entry.get(key) != number:
        msg = f"{where}: expected port {number}, found {entry.get(key)}"
        raise BaseChanged(msg)
    entry[key] = Expr(expr)


def _pod(obj: Obj, values: str) -> tuple[Obj, Obj]:
    """The pod spec (with the pod-level values set) and its only container."""
    template = obj["spec"]["template"]
    template["metadata"] = {
        **template["metadata"],
        "annotations": Optional(f"{values}.podAnnotations"),
    }
    spec = template["spec"]
    containers = spec["containers"]
    if len(containers) != 1:
        msg = f"{obj['metadata']['name']}: expected one container, found {len(containers)}"
        raise BaseChanged(msg)
    pod: Obj = {}
    for key, value in spec.items():
        if key == "serviceAccountName":
            pod["imagePullSecrets"] = Optional(".Values.imagePullSecrets")
        if key == "containers":
            pod["nodeSelector"] = Optional(f"{values}.nodeSelector")
            pod["tolerations"] = Optional(f"{values}.tolerations")
            pod["affinity"] = Optional(f"{values}.affinity")
        if key in ("tolerations", "affinity"):
            continue
        pod[key] = value
    pod["priorityClassName"] = Optional(
        f"{values}.priorityClassName", Expr(f"{values}.priorityClassName | quote")
    )
    pod["securityContext"] = Optional(f"{values}.podSecurityContext")
    template["spec"] = pod
    (container,) = containers
    return pod, container


def _container(container: Obj, values: str) -> Obj:
    """The image, pull policy, security context and resources of a container."""
    out: Obj = {}
    for key, value in container.items():
        if key == "image":
            out["image"] = Expr(IMAGE)
            out["imagePullPolicy"] = Expr(".Values.image.pullPolicy | quote")
        elif key == "imagePullPolicy":
            continue
        elif key in ("securityContext", "resources"):
            out[key] = Optional(f"{values}.{key}")
        else:
            out[key] = value
    for key in ("securityContext", "resources"):
        out.setdefault(key, Optional(f"{values}.{key}"))
    return out


_FEATURE_GATES = (
    "{{- with .Values.featureGates }}",
    "- name: FEATURE_GATES",
    '  value: {{ include "computedomain.featureGates" . | quote }}',
    "{{- end }}",
)


def _extra_env(values: str) -> tuple[str, ...]:
    return (f"{{{{- with {values}.env }}}}", "{{- toYaml . | nindent @N }}", "{{- end }}")


def _controller(obj: Obj) -> Obj:
    where = "controller Deployment"
    obj["spec"]["replicas"] = Expr(f"{CONTROLLER}.replicas")
    pod, container = _pod(obj, CONTROLLER)
    env = container["env"]
    _set(env, "LOG_VERBOSITY", ".Values.logVerbosity | quote", where)
    _set(env, "LOG_VERBOSITY_CD_DAEMON", ".Values.logVerbosity | quote", where)
    _set(env, "IMAGE_NAME", IMAGE, where)
    _set(env, "HTTP_ENDPOINT", f"{CONTROLLER}.metrics.httpEndpoint | quote", where)
    _set(env, "METRICS_PATH", _metrics_path(CONTROLLER), where)
    _set(env, "LEADER_ELECTION_ENABLED", f"{CONTROLLER}.leaderElection.enabled | quote", where)
    _set(env, "IMEX_MODE", IMEX_MODE, where)
    _set(env, "IMEX_ISOLATION", IMEX_ISOLATION, where)
    election = f"{CONTROLLER}.leaderElection"
    env.append(
        Lines(
            (
                f"{{{{- if {election}.enabled }}}}",
                *_env_value("LEADER_ELECTION_LEASE_DURATION", f"{election}.leaseDuration"),
                *_env_value("LEADER_ELECTION_RENEW_DEADLINE", f"{election}.renewDeadline"),
                *_env_value("LEADER_ELECTION_RETRY_PERIOD", f"{election}.retryPeriod"),
                "{{- end }}",
                *_FEATURE_GATES,
                "{{- if .Values.imagePullSecrets }}",
                "- name: CD_DAEMON_IMAGE_PULL_SECRET_NAMES",
                '  value: {{ include "computedomain.pullSecretNames" . | quote }}',
                "{{- end }}",
                "{{- with .Values.daemon.priorityClassName }}",
                "- name: CD_DAEMON_PRIORITY_CLASS_NAME",
                "  value: {{ . | quote }}",
                "{{- end }}",
                "{{- with .Values.daemon.resources }}",
                "- name: CD_DAEMON_RESOURCES",
                "  value: {{ toJson . | quote }}",
                "{{- end }}",
                '{{- with include "computedomain.daemonEnv" . }}',
                "- name: CD_DAEMON_POLICY_ENV",
                "  value: {{ . | quote }}",
                "{{- end }}",
                *_extra_env(CONTROLLER_CONTAINER),
            )
        )
    )
    (port,) = container["ports"]
    _port(port, 8080, f'include "computedomain.port" {CONTROLLER}.metrics.httpEndpoint', where)
    pod["containers"] = [_container(container, CONTROLLER_CONTAINER)]
    return obj


def _env_value(name: str, expr: str) -> tuple[str, str]:
    return (f"- name: {name}", f"  value: {{{{ {expr} | quote }}}}")


def _metrics_path(values: str) -> str:
    return f'ternary {values}.metrics.metricsPath "" {values}.metrics.enabled | quote'


def _kubelet_plugin(obj: Obj) -> Obj:
    where = "kubelet plugin DaemonSet"
    spec = obj["spec"]
    if "updateStrategy" not in spec:
        msg = f"{where}: no updateStrategy"
        raise BaseChanged(msg)
    spec["updateStrategy"] = Optional(f"{PLUGIN}.updateStrategy")
    pod, container = _pod(obj, PLUGIN)
    env = container["env"]
    registrar = f"{PLUGIN}.kubeletRegistrarDirectoryPath"
    plugins = f"{PLUGIN}.kubeletPluginsDirectoryPath"
    _set(env, "LOG_VERBOSITY", ".Values.logVerbosity | quote", where)
    endpoint = f"{PLUGIN}.metrics.computeDomainHttpEndpoint"
    _set(env, "HTTP_ENDPOINT", f"{endpoint} | quote", where)
    _set(env, "METRICS_PATH", _metrics_path(PLUGIN), where)
    _set(env, "NVIDIA_DRIVER_ROOT", ".Values.nvidiaDriverRoot | quote", where)
    _set(env, "KUBELET_REGISTRAR_DIRECTORY_PATH", f"{registrar} | quote", where)
    _set(env, "KUBELET_PLUGINS_DIRECTORY_PATH", f"{plugins} | quote", where)
    _set(env, "HEALTHCHECK_PORT", f"{PLUGIN_CONTAINER}.healthcheckPort | quote", where)
    _set(env, "GPU_CLIQUE_LABEL_ENABLED", f"{CLIQUE_LABEL_ON} | quote", where)
    _set(env, "IMEX_MODE", IMEX_MODE, where)
    _set(env, "IMEX_ISOLATION", IMEX_ISOLATION, where)
    _set(env, "IMEX_HOST_SOCKET_PATH", f"{IMEX}.hostSocketPath | quote", where)
    env.append(
        Lines(
            (
                *_FEATURE_GATES,
                "{{- with .Values.nvidiaCDIHookPath }}",
                *_env_value("NVIDIA_CDI_HOOK_PATH", "."),
                "{{- end }}",
                "{{- with .Values.nvidiaCTKPath }}",
                *_env_value("NVIDIA_CTK_PATH", "."),
                "{{- end }}",
                *_extra_env(PLUGIN_CONTAINER),
            )
        )
    )
    health = f"{PLUGIN_CONTAINER}.healthcheckPort"
    metrics_port, health_port = container["ports"]
    _port(metrics_port, 8081, f'include "computedomain.port" {endpoint}', where)
    _port(health_port, 51515, health, where)
    container["ports"] = [
        metrics_port,
        Lines(
            (
                f"{{{{- if {HEALTHCHECK_ON} }}}}",
                f"- name: {health_port['name']}",
                f"  containerPort: {{{{ {health} }}}}",
                f"  protocol: {health_port['protocol']}",
                "{{- end }}",
            )
        ),
    ]
    for probe in ("startupProbe", "livenessProbe"):
        _port(container[probe]["grpc"], 51515, health, f"{where} {probe}")
        container[probe] = Optional(HEALTHCHECK_ON, container[probe])
    mounts = container["volumeMounts"]
    _find(mounts, "plugins-registry", where)["mountPath"] = Expr(f"{registrar} | quote")
    _find(mounts, "plugins", where)["mountPath"] = Expr(f"{plugins} | quote")
    mounts.append(Lines(_extra(f"{PLUGIN_CONTAINER}.extraVolumeMounts")))
    volumes = pod["volumes"]
    _find(volumes, "plugins-registry", where)["hostPath"]["path"] = Expr(f"{registrar} | quote")
    _find(volumes, "plugins", where)["hostPath"]["path"] = Expr(f"{plugins} | quote")
    _find(volumes, "driver-root", where)["hostPath"] = {
        "path": Expr(".Values.nvidiaDriverRoot | quote"),
        # "/" always exists; a driver container's root appears once that container runs.
        "type": Expr('ternary "Directory" "DirectoryOrCreate" (eq .Values.nvidiaDriverRoot "/")'),
    }
    volumes.append(Lines(_extra(f"{PLUGIN}.extraVolumes")))
    pod["containers"] = [_container(container, PLUGIN_CONTAINER)]
    return obj


def _extra(values: str) -> tuple[str, ...]:
    return (f"{{{{- with {values} }}}}", "{{- toYaml . | nindent @N }}", "{{- end }}")


def _controller_policy(obj: Obj) -> Obj:
    (rule,) = obj["spec"]["ingress"]
    (port,) = rule["ports"]
    endpoint = f"{CONTROLLER}.metrics.httpEndpoint"
    _port(port, 8080, f'include "computedomain.port" {endpoint}', "controller NetworkPolicy")
    return obj


def _plugin_policy(obj: Obj) -> Obj:
    where = "kubelet plugin NetworkPolicy"
    (rule,) = obj["spec"]["ingress"]
    metrics, health = rule["ports"]
    endpoint = f"{PLUGIN}.metrics.computeDomainHttpEndpoint"
    _port(metrics, 8081, f'include "computedomain.port" {endpoint}', where)
    _port(health, 51515, f"{PLUGIN_CONTAINER}.healthcheckPort", where)
    rule["ports"] = [
        metrics,
        Lines(
            (
                f"{{{{- if {HEALTHCHECK_ON} }}}}",
                f"- protocol: {health['protocol']}",
                f"  port: {{{{ {PLUGIN_CONTAINER}.healthcheckPort }}}}",
                "{{- end }}",
            )
        ),
    ]
    return obj


def _plugin_cluster_role(obj: Obj) -> Obj:
    """The plugin's optional rights: nodes ``patch`` only with the clique label
    (components/gpu-clique-label), and ComputeDomains ``patch`` only with host-managed IMEX,
    where the plugin annotates a domain with why a claim waits for the host's daemon
    (components/host-managed-imex)."""
    where = "kubelet plugin ClusterRole"
    for rule in obj["rules"]:
        if rule.get("apiGroups") == [""] and rule.get("resources") == ["nodes"]:
            rule["verbs"] = [
                *rule["verbs"],
                Lines((f"{{{{- if {CLIQUE_LABEL_ON} }}}}", "- patch", "{{- end }}")),
            ]
            break
    else:
        msg = f"{where}: no rule for nodes"
        raise BaseChanged(msg)
    obj["rules"].append(
        Lines(
            (
                f"{{{{- if {HOST_MANAGED} }}}}",
                "- apiGroups:",
                "    - resource.nvidia.com",
                "  resources:",
                "    - computedomains",
                "  verbs:",
                "    - patch",
                "{{- end }}",
            )
        )
    )
    return obj


_RULES: dict[tuple[str, str], Rule] = {
    ("Deployment", "computedomain-controller"): _controller,
    ("DaemonSet", "computedomain-kubelet-plugin"): _kubelet_plugin,
    ("ClusterRole", "computedomain-kubelet-plugin"): _plugin_cluster_role,
    ("NetworkPolicy", "computedomain-controller"): _controller_policy,
    ("NetworkPolicy", "computedomain-kubelet-plugin"): _plugin_policy,
}

# With host-managed IMEX there are no daemons: neither their DeviceClass nor their identity
# (what deployments/components/host-managed-imex deletes).
_DAEMONS = f"not ({HOST_MANAGED})"

_CONDITIONS: dict[tuple[str, str], str] = {
    ("Namespace", NAMESPACE): ".Values.namespace.create",
    ("NetworkPolicy", "computedomain-controller"): f"{CONTROLLER}.networkPolicy.enabled",
    ("NetworkPolicy", "computedomain-kubelet-plugin"): f"{PLUGIN}.networkPolicy.enabled",
    ("NetworkPolicy", "computedomain-daemons"): ".Values.daemon.networkPolicy.enabled",
    ("DeviceClass", "compute-domain-daemon.nvidia.com"): _DAEMONS,
    ("ServiceAccount", "compute-domain-daemon-service-account"): _DAEMONS,
    ("ClusterRole", "compute-domain-daemon-role"): _DAEMONS,
    ("ClusterRoleBinding", "compute-domain-daemon-role-binding"): _DAEMONS,
}
