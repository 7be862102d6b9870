"""What to run for one container: argv, environment, working directory, mounts and device
placeholders, from the pod, the CDI edits of its claims and the node.

Called by :mod:`.kubelet` before it starts a container (through :mod:`.runtime`). Pure; the
files the mounts point at (hosts file, token, emptyDirs, placeholders) are written by the caller.

The environment is built in layers, later ones winning: the image's (``PATH``), the node's
(the simulated hardware, e.g. ``FAKE_NVML_CLIQUE``), what the kubelet provides (the API
server's address, ``CD_SIM_ISOLATION``), the container's ``env`` (with
``$(VAR)`` expansion and downward-API ``fieldRef``/``resourceFieldRef``), then the CDI ``env``
edits, which the runtime applies last. ``command``/``args`` are expanded with the container's
environment; a program of the image (``cd-controller`` ...) becomes its executable in the
running virtual environment.

Isolation (see :mod:`.isolation`): in ``mountns`` mode the mounts are made in a private mount
namespace and paths stay as written. In ``pathmap`` mode there are no mounts: every env value
and argument that is a path under a mount target is rewritten to the mount's source, and the
well-known path variables (:data:`PATH_ENV`) are set for mounts the program cannot be told about
otherwise (its ``/etc/hosts``, the daemon's ``/imexd``).

API access: in ``mountns`` mode against an HTTPS server a pod gets what a real one gets, the
in-cluster configuration: its service account's token, the cluster CA and its namespace mounted
at ``/var/run/secrets/kubernetes.io/serviceaccount`` (what the ServiceAccount admission plugin
adds as a projected volume and the kubelet fills) and ``KUBERNETES_SERVICE_HOST``/``_PORT``.
The programs then run their in-cluster code path, as in production. In ``pathmap`` mode that
fixed path cannot be provided, and plain HTTP has no in-cluster form: there ``KUBECONFIG``
names a kubeconfig with the same token instead.
"""

from __future__ import annotations

import enum
import json
import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .cdi import ContainerEdits
from .expansion import expand
from .paths import NodePaths

__all__ = [
    "PATH_ENV",
    "BindMount",
    "DevicePlaceholder",
    "Image",
    "InCluster",
    "Isolation",
    "LaunchError",
    "LaunchSpec",
    "PodContext",
    "build",
    "hosts_file",
    "volume_sources",
]

Obj = Mapping[str, Any]

# Container paths whose real location a program in pathmap mode learns from these variables.
PATH_ENV: Mapping[str, str] = {
    "/etc/hosts": "HOSTS_FILE",
    "/imexd": "IMEXD_DIR",
    "/var/run/cdi": "CDI_ROOT",
    "/var/lib/kubelet/plugins": "KUBELET_PLUGINS_DIRECTORY_PATH",
    "/var/lib/kubelet/plugins_registry": "KUBELET_REGISTRAR_DIRECTORY_PATH",
    "/driver-root": "DRIVER_ROOT_CTR_PATH",
}
ENV_ISOLATION = "CD_SIM_ISOLATION"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
ENV_DEV_DIR = "CD_SIM_DEV_DIR"  # pathmap: where the container's /dev additions are


class Isolation(enum.StrEnum):
    """How containers see their mounts (chosen by :func:`.isolation.detect`)."""

    MOUNTNS = "mountns"
    PATHMAP = "pathmap"


class LaunchError(ValueError):
    """The container cannot be started as specified (the kubelet's CreateContainerConfigError);
    the message names the field."""


@attrs.frozen
class BindMount:
    """``source`` (a real path here) appears at ``target`` in the container."""

    source: Path
    target: str
    read_only: bool = False


@attrs.frozen
class DevicePlaceholder:
    """A CDI device node, simulated by a regular file holding ``record`` (JSON)."""

    target: str
    source: Path
    record: Mapping[str, Any]


@attrs.frozen
class Image:
    """What the simulation knows about the one container image: its programs and env."""

    commands: Mapping[str, str]
    env: Mapping[str, str]


@attrs.frozen
class InCluster:
    """A pod's in-cluster API access: the directory holding its service account's ``token``,
    ``ca.crt`` and ``namespace`` files, and the API server's address."""

    directory: Path
    host: str
    port: int

    def env(self) -> dict[str, str]:
        port = str(self.port)
        return {
            "KUBERNETES_SERVICE_HOST": self.host,
            "KUBERNETES_SERVICE_PORT": port,
            "KUBERNETES_SERVICE_PORT_HTTPS": port,
        }


@attrs.frozen
class PodContext:
    """The pod-level facts a container launch needs."""

    pod: Obj
    node_name: str
    host_ip: str
    pod_ip: str
    pod_dir: Path
    paths: NodePaths
    isolation: Isolation
    node_env: Mapping[str, str] = attrs.field(factory=dict)
    kubeconfig: Path | None = None
    in_cluster: InCluster | None = None  # used in mountns mode, else the kubeconfig


@attrs.frozen
class LaunchSpec:
    """Everything :mod:`.runtime` needs to start the container's process."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    mounts: tuple[BindMount, ...]
    devices: tuple[DevicePlaceholder, ...]
    isolation: Isolation

    def to_json(self, scratch: Path) -> str:
        """The spec as JSON for the in-namespace init (:mod:`.nsinit`), which builds the
        container's root in the empty directory ``scratch``."""
        return json.dumps(
            {
                "scratch": str(scratch),
                "argv": list(self.argv),
                "env": dict(self.env),
                "cwd": self.cwd,
                "mounts": [
                    {"source": str(m.source), "target": m.target, "readOnly": m.read_only}
                    for m in self.mounts
                ],
            }
        )


def volume_sources(pod: Obj, ctx: PodContext) -> dict[str, Path]:
    """The real directory or file behind each pod volume. Pure.

    hostPath maps through the node's root; emptyDir and projected volumes live in the pod's
    directory (the kubelet fills projected ones). Raises :class:`LaunchError` for other kinds.
    """
    out: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = str(volume.get("name", ""))
        if "hostPath" in volume:
            out[name] = ctx.paths.host(str(volume["hostPath"].get("path", "")))
        elif "emptyDir" in volume or "projected" in volume:
            out[name] = ctx.pod_dir / "volumes" / name
        else:
            kinds = sorted(set(volume) - {"name"})
            msg = f"spec.volumes[{name}]: {', '.join(kinds)} volumes are not simulated"
            raise LaunchError(msg)
    return out


def hosts_file(pod: Obj, pod_ip: str) -> str:
    """The pod's ``/etc/hosts``, as the kubelet writes it. Pure."""
    spec = pod.get("spec") or {}
    hostname = spec.get("hostname") or (pod.get("metadata") or {}).get("name", "")
    lines = [
        "# Kubernetes-managed hosts file.",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
        f"{pod_ip}\t{hostname}",
    ]
    lines.extend(
        f"{alias.get('ip')}\t{chr(9).join(alias.get('hostnames') or [])}"
        for alias in spec.get("hostAliases") or []
    )
    return "\n".join(lines) + "\n"


def build(
    container: Obj,
    ctx: PodContext,
    image: Image,
    edits: ContainerEdits,
    volumes: Mapping[str, Path],
) -> LaunchSpec:
    """The launch spec of ``container``. Pure. Raises :class:`LaunchError` naming the field."""
    cname = str(container.get("name", ""))
    mounts = _mounts(container, ctx, edits, volumes)
    devices = tuple(
        DevicePlaceholder(
            node.path,
            ctx.pod_dir / "dev" / cname / node.path.lstrip("/"),
            {
                "type": node.type,
                "major": node.major,
                "minor": node.minor,
                "fileMode": node.file_mode,
            },
        )
        for node in edits.device_nodes
    )
    env: dict[str, str] = dict(image.env)
    env.update(ctx.node_env)
    env[ENV_ISOLATION] = str(ctx.isolation)
    if ctx.in_cluster is not None and ctx.isolation is Isolation.MOUNTNS:
        if all(m.target != SERVICE_ACCOUNT_DIR for m in mounts):
            account = BindMount(ctx.in_cluster.directory, SERVICE_ACCOUNT_DIR, read_only=True)
            mounts = (*mounts, account)
        env.update(ctx.in_cluster.env())
    elif ctx.kubeconfig is not None:
        env["KUBECONFIG"] = str(ctx.kubeconfig)
    declared = _container_env(container, ctx)
    env.update(declared)
    env.update(edits.env_map())
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    argv = [expand(str(word), declared) for word in words]
    if not argv:
        msg = f"containers[{cname}]: 'command' is required (the simulated image has no entrypoint)"
        raise LaunchError(msg)
    argv[0] = image.commands.get(argv[0], argv[0])
    cwd = str(container.get("workingDir") or "/")
    if ctx.isolation is Isolation.PATHMAP:
        placements = [(m.target, str(m.source)) for m in mounts]
        placements += [(d.target, str(d.source)) for d in devices]
        env = {k: _map_path(v, placements) for k, v in env.items()}
        argv = [_map_path(a, placements) for a in argv]
        cwd = _map_path(cwd, placements)
        for target, variable in PATH_ENV.items():
            mapped = _map_path(target, placements)
            if mapped != target and variable not in env:
                env[variable] = mapped
        if devices:
            env[ENV_DEV_DIR] = str(ctx.pod_dir / "dev" / cname / "dev")
    return LaunchSpec(tuple(argv), env, cwd, mounts, devices, ctx.isolation)


def _mounts(
    container: Obj, ctx: PodContext, edits: ContainerEdits, volumes: Mapping[str, Path]
) -> tuple[BindMount, ...]:
    cname = container.get("name", "")
    out: list[BindMount] = []
    if not (ctx.pod.get("spec") or {}).get("hostNetwork"):
        out.append(BindMount(ctx.pod_dir / "etc-hosts", "/etc/hosts"))
    for mount in container.get("volumeMounts") or []:
        name = mount.get("name", "")
        if name not in volumes:
            msg = f"containers[{cname}].volumeMounts[{name}]: no such volume"
            raise LaunchError(msg)
        source = volumes[name]
        if mount.get("subPath"):
            source = source / str(mount["subPath"]).lstrip("/")
        target = str(mount.get("mountPath", ""))
        if not target.startswith("/"):
            msg = f"containers[{cname}].volumeMounts[{name}].mountPath must be absolute"
            raise LaunchError(msg)
        out.append(BindMount(source, target, bool(mount.get("readOnly"))))
    out.extend(
        BindMount(ctx.paths.host(m.host_path), m.container_path, m.read_only) for m in edits.mounts
    )
    out.extend(
        BindMount(ctx.pod_dir / "dev" / str(cname) / d.path.lstrip("/"), d.path)
        for d in edits.device_nodes
    )
    return tuple(out)


def _container_env(container: Obj, ctx: PodContext) -> dict[str, str]:
    """The container's ``env`` in order; each value may refer to the ones before it."""
    cname = container.get("name", "")
    defined: dict[str, str] = {}
    if container.get("envFrom"):
        msg = f"containers[{cname}].envFrom is not simulated"
        raise LaunchError(msg)
    for item in container.get("env") or []:
        name = str(item.get("name", ""))
        if "value" in item or "valueFrom" not in item:
            defined[name] = expand(str(item.get("value") or ""), defined)
            continue
        source = item["valueFrom"] or {}
        if "fieldRef" in source:
            defined[name] = _field_ref(str(source["fieldRef"].get("fieldPath", "")), ctx, cname)
        elif "resourceFieldRef" in source:
            defined[name] = _resource_ref(container, source["resourceFieldRef"])
        else:
            msg = f"containers[{cname}].env[{name}]: only fieldRef/resourceFieldRef are simulated"
            raise LaunchError(msg)
    return defined


def _field_ref(path: str, ctx: PodContext, cname: str) -> str:
    meta = ctx.pod.get("metadata") or {}
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": ctx.node_name,
        "spec.serviceAccountName": (ctx.pod.get("spec") or {}).get("serviceAccountName", ""),
        "status.hostIP": ctx.host_ip,
        "status.hostIPs": ctx.host_ip,
        "status.podIP": ctx.pod_ip,
        "status.podIPs": ctx.pod_ip,
    }
    if path in simple:
        return str(simple[path])
    for prefix, field in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str((meta.get(field) or {}).get(path[len(prefix) + 2 : -2], ""))
    msg = f"containers[{cname}]: fieldRef {path!r} is not supported"
    raise LaunchError(msg)


def _resource_ref(container: Obj, ref: Obj) -> str:
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    value = ((container.get("resources") or {}).get(kind) or {}).get(resource)
    return str(value) if value is not None else "0"


def _map_path(value: str, placements: Sequence[tuple[str, str]]) -> str:
    """Rewrite ``value`` if it is a path at or under a mount target (the longest wins)."""
    if not value.startswith("/"):
        return value
    normal = posixpath.normpath(value)
    best: tuple[str, str] | None = None
    for target, source in placements:
        if (normal == target or normal.startswith(target.rstrip("/") + "/")) and (
            best is None or len(target) > len(best[0])
        ):
            best = (target, source)
    if best is None:
        return value
    rest = normal[len(best[0]) :].lstrip("/")
    return posixpath.join(best[1], rest) if rest else best[1]
