"""A whole simulated cluster in one process: API server, controllers, scheduler and kubelets,
with ``deployments/`` installed.

Created by ``computedomain sim run`` (which ``sim up`` starts in the background) and by the
integration and e2e tests. :meth:`SimCluster.start` lays out the state directory
(:mod:`.layout`), picks the isolation mode, takes a block of loopback addresses, starts the
:class:`~computedomain_sim.apiserver.server.EmbeddedApiServer` with RBAC on and (by default)
HTTPS with a self-signed CA kept in the API server's data directory, writes the admin kubeconfig
(with that CA as ``certificate-authority-data``, so kubectl and client-go accept it), renders
and installs the manifests (:mod:`.kustomize`, :mod:`.install`), and starts the scheduler, the
DaemonSet/Deployment/ReplicaSet/resourceclaim controllers, pod GC and one kubelet per node of the
:class:`.topology.Topology` (each kubelet puts the CA into its pods' service account kubeconfig
and projected ``ca.crt``). The components of ``deployments/`` then run as real processes in the
simulated pods. :meth:`SimCluster.stop` kills every process and stops the server.

With ``control_plane=kube`` the API server, scheduler and controllers are Kubernetes' own
(:mod:`computedomain_sim.controlplane.kube`, on the block's control-plane address) and none of
the simulation's run; the admin kubeconfig holds a ``system:masters`` client certificate, and
each kubelet talks to the API server as ``system:node:<name>`` with a certificate of its own.
There ``rbac_usage`` names kube-apiserver's audit log of the service accounts' requests
(:mod:`computedomain_sim.controlplane.audit` reads it as usage).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import os
import shutil
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from computedomain.api import validation
from computedomain.kube import errors
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.events import EventRecorder
from computedomain.kube.informerfactory import InformerFactory
from computedomain.kube.resources import DAEMON_SETS, DEPLOYMENTS, NODES
from computedomain.kube.rest import Api
from computedomain.runtime import logs
from computedomain_sim.apiserver import rbac_usage
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.controllers.daemonset_controller import DaemonSetController
from computedomain_sim.controllers.deployment_controller import DeploymentController
from computedomain_sim.controllers.job_controller import JobController
from computedomain_sim.controllers.podgc import PodGarbageCollector
from computedomain_sim.controllers.replicaset_controller import ReplicaSetController
from computedomain_sim.controllers.resourceclaim_controller import ResourceClaimController
from computedomain_sim.controllers.rootca import RootCaPublisher
from computedomain_sim.controllers.statefulset_controller import StatefulSetController
from computedomain_sim.controlplane import binaries
from computedomain_sim.controlplane.kube import KubeControlPlane
from computedomain_sim.imex import host as host_imex
from computedomain_sim.kubelet import isolation
from computedomain_sim.kubelet.ips import AddressBlock
from computedomain_sim.kubelet.kubelet import Kubelet, KubeletSettings
from computedomain_sim.kubelet.launch import ENV_ISOLATION, Image, Isolation
from computedomain_sim.kubelet.paths import NodePaths
from computedomain_sim.scheduler.scheduler import Scheduler

from . import install, kustomize, topology
from .defaults import DEFAULT_MANIFESTS, ControlPlane
from .layout import StateLayout

__all__ = [
    "DEFAULT_MANIFESTS",
    "DRIVER_NAMESPACE",
    "PROGRAMS",
    "ClusterConfig",
    "ControlPlane",
    "HostImexState",
    "SimCluster",
    "image_for",
]

_log = logs.get_logger(__name__)

DRIVER_NAMESPACE = "computedomain-system"
CONTROLLER_DEPLOYMENT = "computedomain-controller"
PLUGIN_DAEMONSET = "computedomain-kubelet-plugin"
PROGRAMS = ("cd-controller", "cd-kubelet-plugin", "cd-imex-daemon", "computedomain")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The checkout's launchers (bin/README), next to the package; absent from an installed wheel.
LAUNCHERS = Path(__file__).resolve().parents[3] / "bin"


class HostImexState(enum.StrEnum):
    """How each node's host ``nvidia-imex`` stand-in starts (:mod:`computedomain_sim.imex.host`)."""

    READY = "ready"
    NOT_READY = "not-ready"


@attrs.frozen
class ClusterConfig:
    """What to simulate."""

    state_dir: Path
    topology: topology.Topology = attrs.field(factory=topology.Topology)
    manifests: Path | None = DEFAULT_MANIFESTS  # a kustomization; None installs nothing
    imex_path: str | None = None  # directory of the nvidia-imex stand-ins, put first on PATH
    isolation: Isolation | None = None  # None: detect
    # A host nvidia-imex stand-in per node (host-managed IMEX); None: none.
    host_imex: HostImexState | None = None
    settings: KubeletSettings = attrs.field(factory=KubeletSettings)
    use_kubectl: bool | None = None  # for rendering; None: when installed
    port: int = 0  # the API server's; 0: any free port (embedded), 6443 (kube)
    tls: bool = True  # HTTPS: kubectl and client-go send tokens only over TLS
    control_plane: ControlPlane = ControlPlane.EMBEDDED
    # Record which RBAC rule allowed each request: the embedded server's usage log
    # (apiserver.rbac_usage), or kube-apiserver's audit log (controlplane.audit) on kube.
    rbac_usage: Path | None = None
    # Extra API server pipeline stages (fault injection, request accounting: see
    # computedomain_sim.apiserver.pipeline), after the RBAC usage log's.
    api_stages: tuple[Any, ...] = ()

    def check(self) -> None:
        """Raise ValueError, naming the field, for what the chosen control plane cannot do."""
        if self.control_plane is not ControlPlane.KUBE:
            return
        embedded_only = {
            "tls": not self.tls,
            "api_stages": bool(self.api_stages),
        }
        for name, asked in embedded_only.items():
            if asked:
                msg = f"{name}: only the embedded control plane has it (control_plane=kube)"
                raise ValueError(msg)


def image_for(imex_path: str | None, trusted_ca: Path | None = None) -> Image:
    """The simulated image: our programs, a PATH, unbuffered Python output (as Python images
    set it, so logs are complete when a container is killed), and this process's PYTHONPATH if
    it has one (a development checkout). Reads the environment.

    The programs are the ``bin/`` launchers of this checkout, run by this interpreter
    (``COMPUTEDOMAIN_PYTHON``), as in the container image (Containerfile); the launcher folder
    follows the virtual environment's on PATH there too, so upstream's program names work.
    Without a checkout (an installed wheel) they are the virtual environment's console scripts.

    Its trust store (``SSL_CERT_FILE``) holds only ``trusted_ca``, the cluster's CA (empty
    without one): the only TLS peer in the simulation is the API server, and every component
    names that CA itself anyway. The host's bundle would be parsed by each Python program that
    imports aiohttp (its import builds two default contexts), and a forming domain starts one
    such program per node at once.
    """
    bin_dir = Path(sys.executable).parent
    launchers = LAUNCHERS if (LAUNCHERS / PROGRAMS[0]).is_file() else None
    programs = launchers or bin_dir
    commands = {name: str(programs / name) for name in PROGRAMS if (programs / name).exists()}
    path = (imex_path, str(bin_dir), str(launchers) if launchers else None, SYSTEM_PATH)
    env = {
        "PATH": ":".join(p for p in path if p),
        "PYTHONUNBUFFERED": "1",
        "SSL_CERT_FILE": str(trusted_ca) if trusted_ca is not None else os.devnull,
    }
    if launchers is not None:
        env["COMPUTEDOMAIN_PYTHON"] = sys.executable
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return Image(commands=commands, env=env)


class SimCluster:
    """A running simulated cluster; see the module docstring."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        self.layout = StateLayout(config.state_dir)
        self.server: EmbeddedApiServer | None = None
        self.control_plane: KubeControlPlane | None = None
        self.api: Api | None = None
        self._node_apis: list[Api] = []
        self.addresses: AddressBlock | None = None
        self.isolation: Isolation = Isolation.PATHMAP
        self.kubelets: dict[str, Kubelet] = {}
        self.host_daemons: dict[str, host_imex.HostImex] = {}
        self._tasks: list[asyncio.Task[Any]] = []

    @property
    def url(self) -> str:
        if self.control_plane is not None:
            return self.control_plane.url
        assert self.server is not None
        return self.server.url

    async def start(self) -> None:
        """Bring the cluster up (not waiting for the components; see :meth:`wait_ready`).
        Raises on any failure, after stopping what was started."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        self.config.check()
        self.isolation = self.config.isolation or isolation.detect()
        self.addresses = AddressBlock.acquire()
        node_configs = topology.nodes(self.config.topology, self.addresses.node_address)
        self.layout.create([n.name for n in node_configs])
        if self.config.host_imex is not None:
            await self._start_host_daemons([n.name for n in node_configs])
        if self.config.control_plane is ControlPlane.KUBE:
            ca_file: Path | None = await self._start_kube()
        else:
            ca_file = await self._start_embedded()
        if self.config.manifests is not None:
            objects = kustomize.render(self.config.manifests, use_kubectl=self.config.use_kubectl)
            await install.install(self._api(), objects)
        if self.server is not None:
            self._start_controllers()
        image = image_for(self.config.imex_path, ca_file)
        ca_pem = ca_file.read_bytes() if ca_file is not None else None
        for node in node_configs:
            api = await self._node_api(node.name)
            events = EventRecorder(api, component="kubelet", host=node.name)
            kubelet = Kubelet(
                api,
                node,
                NodePaths(self.layout.node_root(node.name)),
                addresses=self.addresses,
                image=image,
                isolation=self.isolation,
                events=events,
                server_url=self.url,
                pid_dir=self.layout.pids_dir,
                settings=self.config.settings,
                server_ca=ca_pem,
            )
            self.kubelets[node.name] = kubelet
            self._tasks.append(asyncio.create_task(events.run(), name=f"events-{node.name}"))
            self._tasks.append(asyncio.create_task(kubelet.run(), name=f"kubelet-{node.name}"))
        for kubelet in self.kubelets.values():
            await _first(kubelet.wait_ready(), self._tasks)

    async def _start_host_daemons(self, nodes: list[str]) -> None:
        """Lay out each node's host IMEX files and serve its control socket."""
        ready = self.config.host_imex is HostImexState.READY
        for node in nodes:
            root = self.layout.node_root(node)
            await asyncio.to_thread(host_imex.lay_out, root, ready=ready)
            daemon = host_imex.HostImex(root)
            await daemon.start()
            self.host_daemons[node] = daemon

    async def _start_embedded(self) -> Path | None:
        """Start the embedded API server and connect as admin; its CA file (None: HTTP)."""
        stages: list[Any] = []
        if self.config.rbac_usage is not None:
            stages.append(rbac_usage.stage(rbac_usage.UsageLog(self.config.rbac_usage)))
        self.server = EmbeddedApiServer(
            port=self.config.port,
            data_dir=self.layout.apiserver_dir,
            rbac=True,
            tls=self.config.tls,
            stages=[*stages, *self.config.api_stages],
        )
        await self.server.start()
        assert self.server.state is not None
        self.server.state.pod_logs = self._log_files
        self.server.write_kubeconfig(self.layout.kubeconfig)
        cert = self.server.serving_cert
        self.api = await connect(
            ClientConfig(
                url=self.server.url,
                token=self.server.admin_token,
                qps=0,
                user_agent="sim",
                ca_file=str(cert.cert_path) if cert is not None else None,
            )
        )
        return cert.cert_path if cert is not None else None

    async def _start_kube(self) -> Path:
        """Start the real control plane and connect as admin; returns the cluster CA file."""
        assert self.addresses is not None
        programs = await asyncio.to_thread(binaries.locate)
        plane = KubeControlPlane(
            self.layout.control_plane_dir,
            self.addresses.control_plane_address(),
            binaries=programs,
            logs_dir=self.layout.logs_dir,
            pid_dir=self.layout.pids_dir,
            # The marker is how `sim down` recognises the programs as the simulation's.
            env={"PATH": SYSTEM_PATH, ENV_ISOLATION: str(self.isolation)},
            apiserver_port=self.config.port or None,
            audit_log=self.config.rbac_usage,
        )
        self.control_plane = plane
        await plane.start()
        await asyncio.to_thread(plane.write_admin_kubeconfig, self.layout.kubeconfig)
        self.api = await connect(
            ClientConfig(kubeconfig=str(self.layout.kubeconfig), qps=0, user_agent="sim")
        )
        return plane.ca_file

    def _start_controllers(self) -> None:
        """The simulation's scheduler and controllers (the embedded control plane's)."""
        # The control plane's controllers share their informers, as kube-controller-manager's do.
        shared = InformerFactory(self._api(), prefix="control-plane")
        controllers: dict[str, Any] = {
            "scheduler": Scheduler,
            "daemonset-controller": DaemonSetController,
            "deployment-controller": DeploymentController,
            "replicaset-controller": ReplicaSetController,
            "job-controller": JobController,
            "statefulset-controller": StatefulSetController,
            "resourceclaim-controller": ResourceClaimController,
            "pod-garbage-collector": PodGarbageCollector,
        }
        assert self.server is not None
        cert = self.server.serving_cert
        if cert is not None:  # kube-root-ca.crt needs a CA to publish
            ca_pem = cert.cert_path.read_text()
            controllers["root-ca-cert-publisher"] = functools.partial(
                RootCaPublisher, ca_pem=ca_pem
            )
        for name, kind in controllers.items():
            self._spawn(name, functools.partial(_run_controller, kind, self._api(), shared))

    async def _node_api(self, node: str) -> Api:
        """The client of ``node``'s kubelet: the admin's with the embedded control plane, one
        authenticating as ``system:node:<node>`` with the real one."""
        if self.control_plane is None:
            return self._api()
        kubeconfig = await asyncio.to_thread(self.control_plane.node_kubeconfig, node)
        api = await connect(
            ClientConfig(kubeconfig=str(kubeconfig), qps=0, user_agent=f"kubelet/{node}")
        )
        self._node_apis.append(api)
        return api

    def _api(self) -> Api:
        assert self.api is not None
        return self.api

    def _log_files(self, pod: Mapping[str, Any], container: str) -> list[Path]:
        """The container's log files on its node (``<restart>.log``), oldest first: what the
        API server's ``pods/log`` serves. Raises ValueError for an unsafe name."""
        meta, node = pod["metadata"], str((pod.get("spec") or {}).get("nodeName") or "")
        kubelet = self.kubelets.get(node)
        if kubelet is None:
            return []
        paths = kubelet.ctx.paths
        directory = paths.log_dir(meta["namespace"], meta["name"], meta["uid"])
        directory /= validation.safe_path_component("container", container)
        logs = [p for p in directory.glob("*.log") if p.stem.isdigit()]
        return sorted(logs, key=lambda p: int(p.stem))

    def _spawn(self, name: str, make: Callable[[EventRecorder], Awaitable[None]]) -> None:
        events = EventRecorder(self._api(), component=name)
        self._tasks.append(asyncio.create_task(events.run(), name=f"events-{name}"))
        self._tasks.append(asyncio.create_task(make(events), name=name))  # type: ignore[arg-type]

    async def wait_ready(self, *, components: bool = True, within: float = 120.0) -> None:
        """Wait until every node is Ready and, with ``components``, the controller Deployment
        and the kubelet plugin DaemonSet report all their pods Ready. Raises TimeoutError (with
        what is missing) or the error of a failed cluster task."""
        api = self._api()
        missing = "nodes"
        try:
            async with asyncio.timeout(within):
                while True:
                    missing = await self._not_ready(api, components=components)
                    if not missing:
                        return
                    await _first(asyncio.sleep(0.2), self._tasks)
        except TimeoutError:
            msg = f"the simulated cluster is not ready after {within:g}s: {missing}"
            raise TimeoutError(msg) from None

    async def _not_ready(self, api: Api, *, components: bool) -> str:
        nodes, _ = await api.list_all(NODES)
        ready = [n for n in nodes if _condition(n, "Ready")]
        if len(ready) < len(self.kubelets):
            return f"{len(ready)}/{len(self.kubelets)} nodes Ready"
        if not components or self.config.manifests is None:
            return ""
        try:
            deployment = await api.get(DEPLOYMENTS, CONTROLLER_DEPLOYMENT, DRIVER_NAMESPACE)
            plugin = await api.get(DAEMON_SETS, PLUGIN_DAEMONSET, DRIVER_NAMESPACE)
        except errors.NotFound as exc:
            return str(exc)
        wanted = int((deployment.get("spec") or {}).get("replicas", 1))
        have = int((deployment.get("status") or {}).get("readyReplicas") or 0)
        if have < wanted:
            return f"controller {have}/{wanted} ready"
        status = plugin.get("status") or {}
        desired = int(status.get("desiredNumberScheduled") or 0)
        if desired == 0 or int(status.get("numberReady") or 0) < desired:
            return f"kubelet plugin {status.get('numberReady', 0)}/{desired} ready"
        return ""

    async def stop(self) -> None:
        """Kill every process and stop everything (idempotent)."""
        for task in reversed(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        while self.host_daemons:
            _, daemon = self.host_daemons.popitem()
            await daemon.stop()
        while self._node_apis:
            await self._node_apis.pop().close()
        if self.api is not None:
            await self.api.close()
            self.api = None
        if self.server is not None:
            with contextlib.suppress(Exception):
                await self.server.stop()
            self.server = None
        if self.control_plane is not None:
            await self.control_plane.stop()
            self.control_plane = None
        if self.addresses is not None:
            self.addresses.release()
            self.addresses = None
        # The short node links point into the state directory; start() makes them again.
        shutil.rmtree(self.layout.link_dir, ignore_errors=True)

    def describe(self) -> dict[str, Any]:
        """What ``cluster.json`` records about the running cluster. Pure."""
        return {
            "url": self.url if (self.server, self.control_plane) != (None, None) else "",
            "controlPlane": str(self.config.control_plane),
            "kubeconfig": str(self.layout.kubeconfig),
            "isolation": str(self.isolation),
            "addressBlock": f"127.{self.addresses.block}.0.0/16" if self.addresses else "",
            "nodes": {name: str(k.ctx.paths.root) for name, k in self.kubelets.items()},
            "racks": self.config.topology.racks,
            "nodesPerRack": self.config.topology.nodes_per_rack,
            "profile": self.config.topology.profile,
            "nvmlBackend": str(self.config.topology.nvml_backend),
            "hostImex": str(self.config.host_imex or ""),
        }


def _condition(obj: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def _run_controller(
    kind: Any, api: Api, informers: InformerFactory, events: EventRecorder
) -> Awaitable[None]:
    """Make one simulated controller of the control plane and run it."""
    run: Awaitable[None] = kind(api, events=events, informers=informers).run()
    return run


async def _first(awaitable: Awaitable[Any], tasks: list[asyncio.Task[Any]]) -> None:
    """Await ``awaitable``, but raise at once if one of the cluster's ``tasks`` failed."""
    waiter = asyncio.ensure_future(awaitable)
    pending = [t for t in tasks if not t.done()]
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            waiter.cancel()
            raise RuntimeError(f"cluster task {task.get_name()} failed") from task.exception()
    done, _ = await asyncio.wait([waiter, *pending], return_when=asyncio.FIRST_COMPLETED)
    if waiter in done:
        waiter.result()
        return
    waiter.cancel()
    failed = next(t for t in done if t is not waiter)
    if failed.cancelled():
        msg = f"cluster task {failed.get_name()} was cancelled"
        raise RuntimeError(msg)
    exc = failed.exception()
    msg = f"cluster task {failed.get_name()} ended"
    raise RuntimeError(msg) from exc
