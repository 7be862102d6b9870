"""A real Kubernetes control plane for the simulated cluster (``--control-plane kube``): etcd,
kube-apiserver, kube-controller-manager and kube-scheduler, built by ``make kube-bins``
(:mod:`.binaries`), run as processes of this machine.

Called by :mod:`computedomain_sim.cluster.cluster`, which then installs ``deployments/`` and
runs the simulated kubelets as the nodes, each with a client certificate of its own
(:meth:`KubeControlPlane.node_kubeconfig`). Every program listens on the cluster's own loopback
address (:meth:`~computedomain_sim.kubelet.ips.AddressBlock.control_plane_address`) at the
standard ports, so clusters side by side never collide. They start in order, each waited on
until its health endpoint answers (etcd's ``/health``, the API server's ``/readyz``, the
others' ``/healthz``), and stop in the reverse order.

The API server serves HTTPS with a certificate of the cluster CA (:mod:`.pki`), authenticates
client certificates and service-account tokens (issued by TokenRequest, bound to their pod),
authorizes with the Node and RBAC authorizers and admits with NodeRestriction besides the
defaults (ValidatingAdmissionPolicy among them). The controller manager runs only the
controllers a workload of ours needs, each with its own service account's credentials; the
scheduler's DRA plugin allocates devices. Logs and data are in the control plane's directory
under the cluster's state directory. With ``audit_log`` the API server also writes its audit
log of the service accounts' requests there (:mod:`.audit`: who asked for what, and what the
authorizer decided). Raises :class:`~.process.ProgramFailed` or
:class:`~.pki.PkiError`.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import yaml

from computedomain.runtime import files

from . import audit, pki
from .process import Program

__all__ = ["CONTROLLERS", "KubeControlPlane"]

# kube-controller-manager's controllers for our workloads: DaemonSets, Deployments and their
# ReplicaSets, Jobs, owner-reference garbage collection, namespace deletion, ResourceClaims from
# templates, service accounts (each namespace's "default") and their token Secrets, each
# namespace's kube-root-ca.crt (as on any cluster; the embedded control plane publishes it too),
# pod GC, and node lifecycle: the API server taints every new Node not-ready, and only that
# controller lifts the taint once the node reports Ready (it does not evict: that is
# taint-eviction-controller).
CONTROLLERS = (
    "node-lifecycle-controller",
    "daemonset-controller",
    "deployment-controller",
    "replicaset-controller",
    "job-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "resourceclaim-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "pod-garbage-collector-controller",
)
ETCD_PORT, ETCD_PEER_PORT = 2379, 2380
APISERVER_PORT = 6443
CONTROLLER_MANAGER_PORT, SCHEDULER_PORT = 10257, 10259
SERVICE_CIDR = "10.96.0.0/16"
ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMIN_USER, ADMIN_GROUP = "computedomain-sim-admin", "system:masters"
READY_WITHIN = 120.0  # the API server's first start installs every built-in object


class KubeControlPlane:
    """The four programs of a control plane at ``address``, state in ``directory``."""

    def __init__(
        self,
        directory: Path,
        address: str,
        *,
        binaries: Path,
        logs_dir: Path,
        pid_dir: Path,
        env: dict[str, str],
        apiserver_port: int | None = None,
        audit_log: Path | None = None,
    ) -> None:
        self.directory = directory
        self.address = address
        self.binaries = binaries
        self.logs_dir = logs_dir
        self.pid_dir = pid_dir
        self.env = env
        self.apiserver_port = apiserver_port or APISERVER_PORT
        self.audit_log = audit_log
        self.authority = pki.Authority(directory / "pki")
        self.programs: list[Program] = []

    @property
    def url(self) -> str:
        return f"https://{self.address}:{self.apiserver_port}"

    @property
    def ca_file(self) -> Path:
        return self.authority.ca.cert

    @property
    def ca_pem(self) -> bytes:
        return self.authority.ca_pem

    async def start(self, within: float = READY_WITHIN) -> None:
        """Start the programs in order, each ready before the next. Raises ProgramFailed."""
        await asyncio.to_thread(self._credentials)
        await self._run(self._etcd(), within)
        await self._run(self._apiserver(), within)
        await asyncio.gather(
            self._run(self._controller_manager(), within), self._run(self._scheduler(), within)
        )

    async def stop(self) -> None:
        """Stop the programs, the last started first (idempotent)."""
        while self.programs:
            await self.programs.pop().stop()

    def write_admin_kubeconfig(self, path: Path) -> None:
        """A kubeconfig for the cluster's administrator (group system:masters)."""
        credential = self.authority.issue("admin", ADMIN_USER, [ADMIN_GROUP])
        self._write_kubeconfig(path, credential)

    def node_kubeconfig(self, node: str) -> Path:
        """A kubeconfig for the kubelet of ``node``: user ``system:node:<node>`` in group
        ``system:nodes``, as the Node authorizer and NodeRestriction expect."""
        credential = self.authority.issue(f"node-{node}", f"system:node:{node}", ["system:nodes"])
        path = self.directory / "kubeconfigs" / f"node-{node}"
        self._write_kubeconfig(path, credential)
        return path

    # -- the programs ----------------------------------------------------------------------

    def _credentials(self) -> None:
        authority = self.authority
        authority.create()
        names = (
            f"IP:{self.address}", "IP:127.0.0.1", "IP:10.96.0.1", "DNS:localhost",
            "DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local",
        )  # fmt: skip
        authority.issue("serving", "kube-apiserver", server_names=names)
        authority.signing_key("service-account")
        for name, user in (
            ("controller-manager", "system:kube-controller-manager"),
            ("scheduler", "system:kube-scheduler"),
        ):
            credential = authority.issue(name, user)
            self._write_kubeconfig(self.directory / "kubeconfigs" / name, credential)
        if self.audit_log is not None:
            audit.write_policy(self.directory / "audit-policy.yaml")
            self.audit_log.parent.mkdir(parents=True, exist_ok=True)

    async def _run(self, program: Program, within: float) -> None:
        self.programs.append(program)
        await asyncio.to_thread(program.start)
        await program.wait_ready(within)

    def _program(self, name: str, args: list[str], health_url: str, *, tls: bool) -> Program:
        return Program(
            name,
            [str(self.binaries / name), *args],
            log=self.logs_dir / f"{name}.log",
            health_url=health_url,
            ca_file=self.ca_file if tls else None,
            pid_dir=self.pid_dir,
            env=self.env,
        )

    def _etcd(self) -> Program:
        client = f"http://{self.address}:{ETCD_PORT}"
        peer = f"http://{self.address}:{ETCD_PEER_PORT}"
        args = [
            "--name=sim", f"--data-dir={self.directory / 'etcd'}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=sim={peer}", "--log-level=warn",
            # A simulation's store: losing the last writes in a machine crash costs nothing,
            # and an fsync per write is what a shared machine's disk is slowest at.
            "--unsafe-no-fsync",
        ]  # fmt: skip
        return self._program("etcd", args, f"{client}/health", tls=False)

    def _apiserver(self) -> Program:
        pki_dir = self.authority.directory
        args = [
            f"--etcd-servers=http://{self.address}:{ETCD_PORT}",
            f"--bind-address={self.address}", f"--secure-port={self.apiserver_port}",
            f"--advertise-address={self.address}",
            # The kubernetes Service's endpoints would name a loopback address, which the
            # API refuses: nothing in the simulation reaches the server through the Service.
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki_dir / 'serving.crt'}",
            f"--tls-private-key-file={pki_dir / 'serving.key'}",
            f"--client-ca-file={self.ca_file}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={pki_dir / 'service-account.pub'}",
            f"--service-account-signing-key-file={pki_dir / 'service-account.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--cert-dir={self.directory / 'apiserver'}",
            "--profiling=false",
        ]  # fmt: skip
        if self.audit_log is not None:
            args += [
                f"--audit-policy-file={self.directory / 'audit-policy.yaml'}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",  # written as requests are served, none dropped
            ]
        return self._program("kube-apiserver", args, f"{self.url}/readyz", tls=True)

    def _component_args(self, name: str, port: int) -> list[str]:
        pki_dir = self.authority.directory
        return [
            f"--kubeconfig={self.directory / 'kubeconfigs' / name}",
            f"--bind-address={self.address}", f"--secure-port={port}",
            f"--tls-cert-file={pki_dir / 'serving.crt'}",
            f"--tls-private-key-file={pki_dir / 'serving.key'}",
            "--leader-elect=false", "--profiling=false",
        ]  # fmt: skip

    def _controller_manager(self) -> Program:
        pki_dir = self.authority.directory
        args = [
            *self._component_args("controller-manager", CONTROLLER_MANAGER_PORT),
            "--controllers=" + ",".join(CONTROLLERS),
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki_dir / 'service-account.key'}",
            f"--root-ca-file={self.ca_file}",
        ]
        health = f"https://{self.address}:{CONTROLLER_MANAGER_PORT}/healthz"
        return self._program("kube-controller-manager", args, health, tls=True)

    def _scheduler(self) -> Program:
        args = self._component_args("scheduler", SCHEDULER_PORT)
        health = f"https://{self.address}:{SCHEDULER_PORT}/healthz"
        return self._program("kube-scheduler", args, health, tls=True)

    def _write_kubeconfig(self, path: Path, credential: pki.Credential) -> None:
        def data(file: Path) -> str:
            return base64.b64encode(file.read_bytes()).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "sim",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": data(self.ca_file),
                    },
                }
            ],
            "users": [
                {
                    "name": "sim",
                    "user": {
                        "client-certificate-data": data(credential.cert),
                        "client-key-data": data(credential.key),
                    },
                }
            ],
            "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "sim"}}],
            "current-context": "sim",
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        files.atomic_write(path, yaml.safe_dump(config, sort_keys=False).encode(), mode=0o600)
