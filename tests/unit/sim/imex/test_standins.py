"""The IMEX stand-ins form a domain over real TCP, reload on SIGUSR1, answer -q."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from computedomain.api import names
from computedomain.daemon import dnsnames, hostsfile, imexconfig
from computedomain.kubeletplugin import daemonclaims
from computedomain.policies import builtins
from computedomain_sim.imex import status, wrappers
from tests.support.polling import eventually

MAX = 4
NAMES = dnsnames.all_names(builtins.UpstreamDnsNames(), MAX)


def loopback_ips(count: int) -> list[str]:
    """Addresses no other test is likely to use (127.0.0.0/8 is all loopback on Linux)."""
    a, b = random.randint(100, 250), random.randint(0, 255)
    return [f"127.{a}.{b}.{i + 1}" for i in range(count)]


def free_ports(ips: list[str]) -> tuple[int, int]:
    """Two port numbers free on every address."""
    found: list[int] = []
    while len(found) < 2:
        socks = []
        try:
            first = socket.socket()
            socks.append(first)
            first.bind((ips[0], 0))
            port = first.getsockname()[1]
            for ip in ips[1:]:
                s = socket.socket()
                socks.append(s)
                s.bind((ip, port))
            if port not in found:
                found.append(port)
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    return found[0], found[1]


@attrs.define
class Node:
    dir: Path
    ip: str
    proc: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> Path:
        return self.dir / names.IMEXD_CONFIG

    @property
    def hosts(self) -> Path:
        return self.dir / "hosts"

    def status(self) -> status.Status | None:
        return status.read(self.dir / status.DEFAULT_STATUS_FILE)


def make_node(tmp: Path, ip: str, ports: tuple[int, int], mapping: dict[str, str]) -> Node:
    node = Node(tmp / ip, ip)
    node.dir.mkdir()
    template = daemonclaims.template_bytes().decode()
    template = template.replace("SERVER_PORT=50000", f"SERVER_PORT={ports[0]}")
    template = template.replace("IMEX_CMD_PORT=50005", f"IMEX_CMD_PORT={ports[1]}")
    (node.dir / names.IMEXD_CONFIG_TEMPLATE).write_text(template)
    imexconfig.write_config(node.dir, pod_ip=ip)
    (node.dir / names.IMEXD_NODES_CONFIG).write_text(dnsnames.render_nodes_config(NAMES))
    node.hosts.write_text(hostsfile.render("127.0.0.1 localhost\n", mapping, frozenset(NAMES)))
    return node


def start(node: Node, bindir: Path, reload_interval: str = "0.3", **env: str) -> None:
    node.proc = subprocess.Popen(
        [str(bindir / names.IMEX_BINARY), "-c", str(node.config)],
        env={
            **os.environ,
            "HOSTS_FILE": str(node.hosts),
            "SIM_IMEX_RELOAD_INTERVAL": reload_interval,
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def ctl(node: Node, bindir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bindir / names.IMEX_CTL_BINARY), "-c", str(node.config), "-q"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    return wrappers.ensure(tmp_path / "cache")


@pytest.fixture
def cluster(tmp_path: Path, bindir: Path):  # type: ignore[no-untyped-def]
    nodes: list[Node] = []

    def build(count: int) -> list[Node]:
        ips = loopback_ips(count)
        ports = free_ports(ips)
        mapping = {NAMES[i]: ip for i, ip in enumerate(ips)}
        nodes.extend(make_node(tmp_path, ip, ports, mapping) for ip in ips)
        return nodes

    yield build
    for node in nodes:
        if node.proc is not None and node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()


async def test_three_stand_ins_connect_to_each_other_and_answer_ready(cluster, bindir) -> None:  # type: ignore[no-untyped-def]
    nodes = cluster(3)
    assert ctl(nodes[0], bindir).returncode == 1  # nothing serves the command port yet
    for node in nodes:
        start(node, bindir)

    def formed() -> bool:
        states = [n.status() for n in nodes]
        return all(s is not None and len(s.connected) == 2 for s in states)

    await eventually(formed)
    for i, node in enumerate(nodes):
        state = node.status()
        assert state is not None
        assert state.node_id == i
        assert state.own_ip == node.ip
        assert sorted(state.expected) == sorted(set(range(3)) - {i})
        result = ctl(node, bindir)
        assert (result.returncode, result.stdout) == (0, "READY\n")


async def test_sigusr1_re_resolves_at_most_once_per_window(cluster, bindir) -> None:  # type: ignore[no-untyped-def]
    nodes = cluster(2)
    node = nodes[0]
    start(node, bindir, reload_interval="60")
    await eventually(lambda: (s := node.status()) is not None and s.serving)
    assert node.proc is not None
    new_ip = loopback_ips(1)[0]
    node.hosts.write_text(
        hostsfile.render(
            node.hosts.read_text(), {NAMES[0]: node.ip, NAMES[1]: new_ip}, frozenset(NAMES)
        )
    )
    node.proc.send_signal(signal.SIGUSR1)
    await eventually(lambda: (s := node.status()) is not None and s.reloads == 1)
    node.proc.send_signal(signal.SIGUSR1)  # inside the window: ignored, like the real IMEX
    await eventually(lambda: (s := node.status()) is not None and s.ignored_signals == 1)
    state = node.status()
    assert state is not None
    assert state.reloads == 1
    assert state.resolved[NAMES[1]] == new_ip
    assert state.expected == {1: new_ip}


async def test_no_own_name_in_the_hosts_file_is_the_real_error(cluster, bindir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    node = cluster(1)[0]
    node.hosts.write_text("127.0.0.1 localhost\n")
    start(node, bindir)
    assert node.proc is not None
    out, _ = node.proc.communicate(timeout=30)
    assert node.proc.returncode == 1
    assert b"No matching network interface found" in out


async def test_a_host_held_session_is_nv_err_in_use(cluster, bindir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    node = cluster(1)[0]
    marker = tmp_path / "host-session"
    marker.touch()
    start(node, bindir, SIM_IMEX_HOST_SESSION_FILE=str(marker))
    assert node.proc is not None
    out, _ = node.proc.communicate(timeout=30)
    assert node.proc.returncode == 1
    assert b"NV_ERR_IN_USE" in out


async def test_sigterm_is_a_graceful_exit(cluster, bindir) -> None:  # type: ignore[no-untyped-def]
    node = cluster(1)[0]
    start(node, bindir)
    await eventually(lambda: (s := node.status()) is not None and s.serving)
    assert node.proc is not None
    node.proc.send_signal(signal.SIGTERM)
    assert node.proc.wait(timeout=30) == 0
    state = node.status()
    assert state is not None
    assert state.stopped


def test_imex_path_prints_a_directory_with_both_executables(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "computedomain.cli.main",
            "sim",
            "imex-path",
            "--root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    directory = Path(result.stdout.strip())
    assert directory.parent == tmp_path
    for binary in (names.IMEX_BINARY, names.IMEX_CTL_BINARY):
        assert os.access(directory / binary, os.X_OK)
    # Stable: a second call gives the same directory and leaves the scripts as they are.
    assert wrappers.ensure(tmp_path) == directory
