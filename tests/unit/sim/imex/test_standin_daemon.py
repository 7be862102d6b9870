"""The ``nvidia-imex`` stand-in's pieces: what it loads (its start-up is its cost: one per
simulated daemon), its command line, its address reading and its status file."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain_sim.imex import daemon, status

HEAVY = ("asyncio", "attr", "attrs", "argparse", "ipaddress", "pathlib", "typing")


def test_the_stand_in_loads_no_asyncio_attrs_or_argparse(tmp_path: Path) -> None:
    # Run as the wrapper runs it (python -m), up to a missing config; list what it loaded
    # beyond what the interpreter's own start-up had.
    code = (
        "import runpy, sys, json\n"
        "before = set(sys.modules)\n"
        f"sys.argv = ['nvidia-imex', '-c', {str(tmp_path / 'none.cfg')!r}]\n"
        "try:\n"
        "    runpy.run_module('computedomain_sim.imex.daemon', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 1, exc.code\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert "computedomain_sim.imex.daemon" in loaded or "computedomain_sim.imex.ctl" in loaded
    assert [m for m in loaded if m.split(".")[0] in HEAVY] == []


def test_command_line_spellings() -> None:
    assert daemon.parse_args(["-c", "f"]) == {"config": "f"}
    assert daemon.parse_args(["--config=f", "--hosts-file", "h", "--status-file=s"]) == {
        "config": "f",
        "hosts_file": "h",
        "status_file": "s",
    }


@pytest.mark.parametrize(
    "argv", [[], ["-c"], ["--hosts-file", "h"], ["-c", "f", "--other"], ["-c=f"]]
)
def test_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert daemon.main(argv) == 2
    assert "usage: nvidia-imex" in capsys.readouterr().err


addresses = st.one_of(
    st.ip_addresses().map(str),
    st.ip_addresses(v=6).map(lambda a: a.exploded),
    st.text(alphabet="0123456789abcdef.:", max_size=20),
    st.sampled_from(["compute-domain-daemon-0000", "localhost", "010.0.0.1", "1.2.3"]),
)


@given(addresses)
def test_ip_literals_read_as_ipaddress_reads_them(text: str) -> None:
    try:
        expected: str | None = str(ipaddress.ip_address(text))
    except ValueError:
        expected = None
    assert daemon.ip_literal(text) == expected


def test_a_name_resolves_through_the_first_hosts_line_naming_it() -> None:
    table = daemon.resolve_table("10.0.0.1 a b # c\n10.0.0.2 a\n# 10.0.0.3 d\n")
    assert table == {"a": "10.0.0.1", "b": "10.0.0.1"}
    assert daemon.resolve("a", table) == "10.0.0.1"
    assert daemon.resolve("10.0.0.9", table) == "10.0.0.9"
    assert daemon.resolve("d", table) is None


def test_the_status_file_round_trips_and_a_torn_one_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / status.DEFAULT_STATUS_FILE
    assert status.read(path) is None
    state = status.Status(pid=7, node_id=1, expected={0: "10.0.0.1"}, connected=[0])
    status.write(path, state)
    assert status.read(path) == state
    assert [p.name for p in tmp_path.iterdir()] == [status.DEFAULT_STATUS_FILE]
    for torn in ('{"pid": 7', '{"pid": 7, "unknown": 1}', "[1]", "null"):
        path.write_text(torn)
        assert status.read(path) is None
