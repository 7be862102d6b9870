"""Running ``cd-imex-daemon`` as real processes, with the environment a pod would give it.

The test plays the DaemonSet and CDI (env, ``IMEXD_DIR`` with the plugin's template, an own
``HOSTS_FILE``, ``PATH`` with the IMEX stand-ins) and the kubelet (a probe loop that runs
``cd-imex-daemon check`` and sets the pod's Ready condition from its result).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
from pathlib import Path

import attrs

from computedomain.api import names
from computedomain.kubeletplugin import daemonclaims
from computedomain_sim.imex import status as imex_status
from tests.integration.daemon.cluster import Cluster
from tests.support.polling import eventually

DAEMON = str(Path(sys.executable).with_name("cd-imex-daemon"))
# Probe periods, as upstream: the startup probe every second, then readiness every 10 s.
STARTUP_PERIOD = 1.0
READINESS_PERIOD = 10.0


def loopback_block() -> str:
    """A random ``127.a.b`` prefix: addresses no other test is likely to use."""
    return f"127.{random.randint(100, 250)}.{random.randint(0, 255)}"


def free_port_pair(ips: list[str]) -> tuple[int, int]:
    """Two port numbers free on every address in ``ips``."""
    found: list[int] = []
    while len(found) < 2:
        socks: list[socket.socket] = []
        try:
            for ip in ips:
                sock = socket.socket()
                socks.append(sock)
                sock.bind((ip, socks[0].getsockname()[1] if len(socks) > 1 else 0))
            port = socks[0].getsockname()[1]
            if port not in found:
                found.append(port)
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    return found[0], found[1]


@attrs.define
class Pod:
    """One daemon pod: its node, identity, files, process and kubelet loop."""

    name: str
    node: str
    ip: str
    uid: str
    directory: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    kubelet: asyncio.Task[None] | None = None

    @property
    def imexd(self) -> Path:
        return self.directory / "imexd"

    @property
    def hosts(self) -> Path:
        return self.directory / "hosts"

    @property
    def log(self) -> Path:
        return self.directory / "daemon.log"

    def imex(self) -> imex_status.Status | None:
        return imex_status.read(self.imexd / imex_status.DEFAULT_STATUS_FILE)

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [DAEMON, "-v", "4", "run"], env=self.env, stdout=out, stderr=subprocess.STDOUT
            )

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    async def exited(self, within: float = 30.0) -> int:
        assert self.proc is not None
        proc = self.proc
        await eventually(lambda: proc.poll() is not None, within=within, every=0.05, what="exit")
        code = proc.poll()
        assert code is not None
        return code

    async def check(self) -> bool:
        probe = await asyncio.create_subprocess_exec(
            DAEMON, "-v", "0", "check", env=self.env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        return await probe.wait() == 0


class Domain:
    """The pods of one ComputeDomain clique on one test machine."""

    def __init__(
        self,
        cluster: Cluster,
        tmp: Path,
        *,
        kubeconfig: Path,
        bindir: Path,
        cd_uid: str,
        clique: str,
    ) -> None:
        self.cluster = cluster
        self.tmp = tmp
        self.kubeconfig = kubeconfig
        self.bindir = bindir
        self.cd_uid = cd_uid
        self.clique = clique
        self.block = loopback_block()
        self.ports = free_port_pair([f"{self.block}.{i}" for i in range(1, 40)])
        self.pods: list[Pod] = []
        self._next_ip = 1

    def next_ip(self) -> str:
        ip = f"{self.block}.{self._next_ip}"
        self._next_ip += 1
        return ip

    async def add_pod(self, node: str, **extra_env: str) -> Pod:
        """Create the pod object, its files and env (what the kubelet and CDI prepare)."""
        ip = self.next_ip()
        name = f"daemon-{node}-{len(self.pods)}"
        uid = await self.cluster.create_pod(name, node, ip, self.cd_uid)
        directory = self.tmp / name
        pod = Pod(name, node, ip, uid, directory, {})
        pod.imexd.mkdir(parents=True)
        template = daemonclaims.template_bytes().decode()
        template = template.replace("SERVER_PORT=50000", f"SERVER_PORT={self.ports[0]}")
        template = template.replace("IMEX_CMD_PORT=50005", f"IMEX_CMD_PORT={self.ports[1]}")
        (pod.imexd / names.IMEXD_CONFIG_TEMPLATE).write_text(template)
        pod.hosts.write_text(f"127.0.0.1\tlocalhost\n{ip}\t{name}\n")
        pod.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "POD_"))},
            "PATH": f"{self.bindir}{os.pathsep}{os.environ.get('PATH', '')}",
            "KUBECONFIG": str(self.kubeconfig),
            "IMEXD_DIR": str(pod.imexd),
            "HOSTS_FILE": str(pod.hosts),
            "CLIQUE_ID": self.clique,
            "COMPUTE_DOMAIN_UUID": self.cd_uid,
            "COMPUTE_DOMAIN_NAME": "cd",
            "COMPUTE_DOMAIN_NAMESPACE": self.cluster.namespace,
            "NODE_NAME": node,
            "POD_IP": ip,
            "POD_UID": uid,
            "POD_NAME": name,
            "POD_NAMESPACE": self.cluster.namespace,
            "MAX_NODES_PER_IMEX_DOMAIN": "8",
            "FEATURE_GATES": "",
            "IMEX_RELOAD_INTERVAL": "300ms",
            "SIM_IMEX_RELOAD_INTERVAL": "0.3",
            **extra_env,
        }
        self.pods.append(pod)
        return pod

    async def run(self, pod: Pod) -> None:
        """Start the daemon and its kubelet (the probe loop that sets Ready)."""
        pod.start()
        pod.kubelet = asyncio.create_task(self._kubelet(pod), name=f"kubelet-{pod.name}")

    async def _kubelet(self, pod: Pod) -> None:
        """The startup probe every second until it passes, then the readiness probe."""
        ready: bool | None = None
        while pod.proc is not None and pod.proc.poll() is None:
            now = await pod.check()
            if now != ready:
                ready = now
                await self.cluster.set_status(pod.name, ready=ready)
            await asyncio.sleep(READINESS_PERIOD if ready else STARTUP_PERIOD)

    async def stop(self, pod: Pod, sig: int = signal.SIGKILL) -> None:
        if pod.kubelet is not None:
            pod.kubelet.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pod.kubelet
        if pod.proc is not None and pod.proc.poll() is None:
            pod.proc.send_signal(sig)
            with contextlib.suppress(TimeoutError):
                await pod.exited()
        await self._reap_standin(pod)

    async def _reap_standin(self, pod: Pod) -> None:
        state = pod.imex()
        if state is not None and not state.stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(state.pid, signal.SIGKILL)

    async def close(self) -> None:
        for pod in self.pods:
            await self.stop(pod)
