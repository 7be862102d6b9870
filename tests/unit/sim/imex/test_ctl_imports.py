"""The Python ``nvidia-imex-ctl`` stand-in (the one used where there is no bash) runs as a fresh
process for every readiness probe of every simulated IMEX daemon (once a second during
start-up), so what it loads is its cost: its wrapper runs it as a self-contained script without
``site`` and without the package (bench/e2e.py measures the effect). It reads the IMEX config as
the daemon's reader does."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.api import names
from computedomain.daemon import imexconfig
from computedomain_sim.imex import ctl, wrappers
from tests.unit.sim import standalone

CTL_FILE = Path(ctl.__file__)


def test_the_wrapper_runs_the_stand_in_isolated_without_site(tmp_path: Path) -> None:
    text = (wrappers.ensure(tmp_path, bash="") / names.IMEX_CTL_BINARY).read_text()
    assert f"-I -S {CTL_FILE}" in text


def test_the_stand_in_loads_only_the_standard_library(tmp_path: Path) -> None:
    # Run it as the wrapper does, then list what it had imported: nothing of the package, no
    # site, no asyncio.
    roots = ("computedomain", "site", "asyncio", "attrs", "attr", "logging", "argparse")
    argv = ["ctl", "-c", str(tmp_path / "none"), "-q"]
    assert standalone.modules_loaded(CTL_FILE, argv, roots) == []


def free_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_asking_a_daemon_at_its_ip_loads_no_socket_layer(tmp_path: Path) -> None:
    # The query goes through _socket alone, and an IP literal skips getaddrinfo and its idna
    # codec (stringprep, unicodedata): each would cost about as much as the rest of the run.
    config = tmp_path / "imexd.cfg"
    config.write_text(
        f"IMEX_CMD_ENABLED=1\nIMEX_CMD_BIND_INTERFACE_IP=127.0.0.1\nIMEX_CMD_PORT={free_port()}\n"
    )
    roots = ("socket", "selectors", "stringprep", "unicodedata")
    argv = ["ctl", "-c", str(config), "-q"]
    assert standalone.modules_loaded(CTL_FILE, argv, roots) == []


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "::1", "localhost", "10.0.0.01", "::ffff:10.0.0.1"],
    ids=["ipv4", "ipv6", "name", "not-quite-ipv4", "mapped-ipv4"],
)  # fmt: skip
def test_the_addresses_tried_are_getaddrinfos(host: str) -> None:
    found = socket.getaddrinfo(host, 50005, 0, socket.SOCK_STREAM)
    expected = [(family, kind, proto, address[:2]) for family, kind, proto, _, address in found]
    assert [(f, k, p, a[:2]) for f, k, p, a in ctl.addresses(host, 50005)] == expected


def ask_ctl(tmp_path: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """``nvidia-imex-ctl -c <config> -q`` through the wrapper the simulation installs."""
    wrapper = wrappers.ensure(tmp_path / "cache", bash="") / names.IMEX_CTL_BINARY
    return subprocess.run(
        [str(wrapper), "-c", str(config), "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_refused_connection_is_not_ready(tmp_path: Path) -> None:
    config = tmp_path / "imexd.cfg"
    port = free_port()
    config.write_text(
        f"IMEX_CMD_ENABLED=1\nIMEX_CMD_BIND_INTERFACE_IP=127.0.0.1\nIMEX_CMD_PORT={port}\n"
    )
    result = ask_ctl(tmp_path, config)
    assert (result.returncode, result.stdout) == (
        1,
        f"IMEX daemon at 127.0.0.1:{port} is not ready: [Errno 111] Connection refused\n",
    )


def test_a_missing_config_is_reported_with_exit_1(tmp_path: Path) -> None:
    result = ask_ctl(tmp_path, tmp_path / "imexd.cfg")
    assert result.returncode == 1
    assert result.stdout.startswith(f"cannot read {tmp_path / 'imexd.cfg'}")


def test_a_disabled_command_service_is_not_ready(tmp_path: Path) -> None:
    config = tmp_path / "imexd.cfg"
    config.write_text("IMEX_CMD_ENABLED=0\nIMEX_CMD_PORT=50005\n")
    result = ask_ctl(tmp_path, config)
    assert (result.returncode, result.stdout) == (
        1,
        "IMEX command service is disabled (IMEX_CMD_ENABLED != 1)\n",
    )


def test_bad_usage_exits_2(capsys) -> None:  # type: ignore[no-untyped-def]
    assert ctl.main(["-q"]) == 2
    assert ctl.main(["-c", "x"]) == 2
    assert ctl.main(["-c", "x", "-q", "--other"]) == 2
    assert "--other" in capsys.readouterr().err


def test_config_flag_spellings() -> None:
    for config in (["-c", "f"], ["--config", "f"], ["--config=f"], ["-cf"]):
        assert ctl.parse_args([*config, "-q"]) == ("f", True)
        assert ctl.parse_args(["--query", *config]) == ("f", True)
    assert ctl.parse_args(["-c", "f"]) == ("f", False)


lines = st.lists(
    st.one_of(
        st.tuples(
            st.text(alphabet="ABCDEFGHIJ_ #=", min_size=0, max_size=8),
            st.sampled_from(["=", " = ", "", "=="]),
            st.text(alphabet="0123456789.abc #=", max_size=8),
        ).map("".join),
        st.sampled_from(["", "   ", "# comment", "#A=1", "\t"]),
    ),
    max_size=12,
)


@given(lines)
def test_the_stand_in_reads_the_config_as_the_daemon_does(config_lines: list[str]) -> None:
    text = "\n".join(config_lines)
    assert ctl.parse_config(text) == imexconfig.parse(text)
