"""More scenario helpers, beside :mod:`.kit`: variants of the simulation's manifests (an overlay
of ``deployments/overlays/sim`` written into a test's temporary directory, with components,
extra environment for the controller and the kubelet plugin, and controller replicas), the
driver's component pods and their logs, and the controller's leader-election lease.

Also :func:`release`, which frees a test's nodes for the next, and :func:`lent`, a shared
cluster lent to one module and freed after it; the two clusters the modules share
(``default_cluster``, ``leader_election_cluster``) are fixtures of ``conftest.py``.

Used by the scenario modules of part 2 (restarts, numNodes, IP mode, leader election, host IMEX
conflict, least privilege).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api
from computedomain_sim.apiserver import rbac_usage
from computedomain_sim.controlplane import audit
from computedomain_sim.imex import wrappers

from .kit import DRIVER_NAMESPACE, Cluster, api_of, eventually

REPO = Path(__file__).resolve().parents[2]
SIM_OVERLAY = REPO / "deployments" / "overlays" / "sim"
CONTROLLER = "computedomain-controller"
PLUGIN = "computedomain-kubelet-plugin"
CONTROLLER_SELECTOR = "app.kubernetes.io/component=controller"
PLUGIN_SELECTOR = "app.kubernetes.io/component=kubelet-plugin"
LEASE = "computedomain-controller"

Obj = dict[str, Any]


def _env_patch(kind: str, name: str, env: Mapping[str, str]) -> list[str]:
    lines = [
        "  - target:",
        f"      kind: {kind}",
        f"      name: {name}",
        "    patch: |-",
    ]
    for key, value in env.items():
        lines += [
            "      - op: add",
            "        path: /spec/template/spec/containers/0/env/-",
            f"        value: {{name: {key}, value: {json.dumps(value)}}}",
        ]
    return lines


def overlay(
    directory: Path,
    *,
    components: Sequence[str] = (),
    controller_env: Mapping[str, str] | None = None,
    plugin_env: Mapping[str, str] | None = None,
) -> Path:
    """Write a kustomization in ``directory`` (created) over the simulation's manifests, adding
    the named components of ``deployments/components`` and environment variables to the
    controller and the kubelet plugin (appended, so they override earlier entries of the same
    name). Returns the directory, for ``sim up --manifests``."""
    directory.mkdir(parents=True, exist_ok=True)
    base = os.path.relpath(SIM_OVERLAY, directory)
    lines = [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources:",
        f"  - {base}",
    ]
    if components:
        lines.append("components:")
        for component in components:
            path = os.path.relpath(REPO / "deployments" / "components" / component, directory)
            lines.append(f"  - {path}")
    patches: list[str] = []
    if controller_env:
        patches += _env_patch("Deployment", CONTROLLER, controller_env)
    if plugin_env:
        patches += _env_patch("DaemonSet", PLUGIN, plugin_env)
    if patches:
        lines += ["patches:", *patches]
    (directory / "kustomization.yaml").write_text("\n".join(lines) + "\n")
    return directory


async def component_pods(api: Api, selector: str) -> list[Obj]:
    """The driver's pods matching ``selector`` (controller or plugin), live ones only."""
    items, _ = await api.list_all(resources.PODS, DRIVER_NAMESPACE, label_selector=selector)
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def ready(pod: Obj) -> bool:
    """Whether the pod runs with its Ready condition True."""
    status = pod.get("status") or {}
    conditions = status.get("conditions") or ()
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def container_pid(pod: Obj) -> int:
    """The PID of the pod's first container (the simulated runtime's ``sim://<pid>`` id)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    for status in statuses:
        container_id = status.get("containerID") or ""
        if container_id.startswith("sim://"):
            return int(container_id.removeprefix("sim://"))
    raise AssertionError(f"pod {pod['metadata']['name']} has no running container: {statuses}")


def driver_logs(cluster: Cluster) -> dict[str, str]:
    """Every container log (all restarts) of the driver namespace's pods on every node, by path
    relative to the state directory."""
    out: dict[str, str] = {}
    for node in cluster.nodes:
        pods = cluster.node_root(node) / "var/log/pods"
        for path in sorted(pods.glob(f"{DRIVER_NAMESPACE}_*/*/*.log")):
            out[str(path.relative_to(cluster.state_dir))] = path.read_text(errors="replace")
    return out


async def lease_holder(api: Api) -> str | None:
    """The controller lease's ``holderIdentity`` (None when absent or released)."""
    try:
        lease = await api.get(resources.LEASES, LEASE, DRIVER_NAMESPACE)
    except errors.NotFound:
        return None
    return (lease.get("spec") or {}).get("holderIdentity") or None


def imex_wrappers(directory: Path, markers: Path) -> Path:
    """A directory for ``sim up --imex-path`` with ``nvidia-imex`` and ``nvidia-imex-ctl`` that
    run the simulation's stand-ins, where a file ``<markers>/<node>.held`` makes the host hold
    the IMEX session on that node (the stand-in's ``SIM_IMEX_HOST_SESSION_FILE`` switch: it
    then fails with ``NV_ERR_IN_USE`` while the file exists) and ``<markers>/<node>.hang``
    makes ``nvidia-imex`` hang without serving."""
    stand_ins = wrappers.ensure(directory / "stand-ins")
    held = shlex.quote(str(markers)) + '/"$NODE_NAME".held'
    hang = shlex.quote(str(markers)) + '/"$NODE_NAME".hang'
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    imex = bin_dir / "nvidia-imex"
    imex.write_text(
        "#!/bin/sh\n"
        f"if [ -e {hang} ]; then exec sleep 100000; fi\n"
        f"export SIM_IMEX_HOST_SESSION_FILE={held}\n"
        f'exec {shlex.quote(str(stand_ins / "nvidia-imex"))} "$@"\n'
    )
    ctl = bin_dir / "nvidia-imex-ctl"
    ctl.write_text(f'#!/bin/sh\nexec {shlex.quote(str(stand_ins / "nvidia-imex-ctl"))} "$@"\n')
    for path in (imex, ctl):
        path.chmod(0o755)
    return bin_dir


@attrs.frozen
class Shared:
    """A scenario module's cluster with the nodes' host-session markers (see
    :func:`imex_wrappers`) and, when recorded, the RBAC-usage file (``sim up --rbac-usage``)
    and the control plane that wrote it."""

    cluster: Cluster
    markers: Path
    rbac_usage: Path | None = None
    control_plane: str = "embedded"


async def rbac_uses(api: Api, usage: Path, control_plane: str) -> list[rbac_usage.Use]:
    """The RBAC decisions recorded in ``usage`` (``sim up --rbac-usage``): the embedded
    server's usage log, or on kube the API server's audit log, whose decisions and roles are
    the real authorizer's, attributed to rules by the roles the API server holds now
    (:func:`computedomain_sim.controlplane.audit.uses`)."""
    if control_plane == "embedded":
        return list(rbac_usage.read(usage))
    roles: dict[str, list[Obj]] = {}
    for role in (await api.list_all(resources.CLUSTER_ROLES))[0]:
        roles[f"ClusterRole/{role['metadata']['name']}"] = role.get("rules") or []
    for role in (await api.list_all(resources.ROLES))[0]:
        meta = role["metadata"]
        roles[f"Role/{meta['namespace']}/{meta['name']}"] = role.get("rules") or []
    return await asyncio.to_thread(lambda: list(audit.uses(audit.read(usage), roles)))


async def release(api: Api, cluster: Cluster, ns: str) -> None:
    """Delete the namespace's Deployments, pods and ComputeDomains and wait until they are gone
    and no node carries a domain label any more, so the next test finds the nodes free."""
    for resource in (resources.DEPLOYMENTS, resources.PODS, resources.COMPUTE_DOMAINS):
        items, _ = await api.list_all(resource, ns)
        for item in items:
            with contextlib.suppress(errors.NotFound):
                await api.delete(resource, item["metadata"]["name"], ns)

    async def free() -> bool:
        for resource in (resources.PODS, resources.COMPUTE_DOMAINS):
            items, _ = await api.list_all(resource, ns)
            if items:
                return False
        nodes, _ = await api.list_all(resources.NODES)
        return not any(names.COMPUTE_DOMAIN_LABEL in n["metadata"].get("labels", {}) for n in nodes)

    await eventually(free, what=f"namespace {ns} released its nodes")


@contextlib.contextmanager
def lent(shared: Shared, *namespaces: str) -> Iterator[Cluster]:
    """The shared cluster for one module, which works in ``namespaces``; when the module is
    done they are released (:func:`release`), so the next module finds every node free."""
    try:
        yield shared.cluster
    finally:

        async def free() -> None:
            async with api_of(shared.cluster) as api:
                # At once: each waits until no node carries any domain's label.
                await asyncio.gather(*(release(api, shared.cluster, ns) for ns in namespaces))

        asyncio.run(free())
