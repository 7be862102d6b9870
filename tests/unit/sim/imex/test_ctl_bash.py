"""The bash ``nvidia-imex-ctl`` stand-in is the Python one's twin: on every case (usage, config,
answers of the daemon's command port) both give the same exit code and the same output up to
the wording of an OS error, and the wrapper directory picks bash where there is one."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.api import names
from computedomain_sim.imex import wrappers

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="no bash on this machine")


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the bash stand-in, the Python stand-in), as the wrapper directory writes them."""
    root = tmp_path_factory.mktemp("wrappers")
    in_bash = wrappers.ensure(root / "bash", bash=BASH) / names.IMEX_CTL_BINARY
    in_python = wrappers.ensure(root / "python", bash="") / names.IMEX_CTL_BINARY
    return in_bash, in_python


def test_the_wrapper_directory_uses_bash_where_there_is_one(tools: tuple[Path, Path]) -> None:
    in_bash, in_python = tools
    assert in_bash.read_text().startswith(f"#!{BASH}\n")
    assert "ctl.py" in in_python.read_text()
    assert in_bash.parent != in_python.parent  # each choice has its own directory


def _run(tool: Path, *args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [str(tool), *args], capture_output=True, text=True, check=False, timeout=30
    )
    # The reason an OS call failed is worded by each language its own way.
    out = re.sub(r"(is not ready|cannot read [^:\n]*):[^\n]*", r"\1", done.stdout)
    return done.returncode, out, done.stderr


def both(tools: tuple[Path, Path], *args: str) -> tuple[int, str, str]:
    in_bash, in_python = _run(tools[0], *args), _run(tools[1], *args)
    assert in_bash[:2] == in_python[:2]
    assert bool(in_bash[2]) == bool(in_python[2])
    return in_bash


@pytest.fixture
def refused() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def answering() -> Iterator[tuple[int, list[bytes]]]:
    """A command port that reads one line and answers the next of ``answers`` (then closes)."""
    answers: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\n" not in data and (chunk := conn.recv(64)):
                    data += chunk
                assert data == b"QUERY\n"
                conn.sendall(answers.pop(0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port, answers
    server.close()
    thread.join(timeout=5)


def config(tmp_path: Path, port: int | str, **extra: str) -> str:
    path = tmp_path / "imexd.cfg"
    lines = {"IMEX_CMD_ENABLED": "1", "IMEX_CMD_BIND_INTERFACE_IP": "127.0.0.1"}
    lines |= {"IMEX_CMD_PORT": str(port), **extra}
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return str(path)


@pytest.mark.parametrize(
    "args",
    [(), ("-q",), ("-c",), ("-c", "x"), ("-c", "x", "-q", "-z"), ("--config",), ("-qq",)],
    ids=["nothing", "no-config", "no-value", "no-query", "unknown", "long-no-value", "qq"],
)
def test_bad_usage_exits_2_with_the_usage(tools: tuple[Path, Path], args: tuple[str, ...]) -> None:
    code, out, err = both(tools, *args)
    assert (code, out) == (2, "")
    assert "nvidia-imex-ctl" in err


def test_an_unreadable_config_and_a_disabled_service_are_not_ready(
    tools: tuple[Path, Path], tmp_path: Path, refused: int
) -> None:
    assert both(tools, "-c", str(tmp_path / "none"), "-q")[:2] == (
        1,
        f"cannot read {tmp_path / 'none'}\n",
    )
    path = config(tmp_path, refused, IMEX_CMD_ENABLED="0")
    assert both(tools, "--config", path, "--query")[:2] == (
        1,
        "IMEX command service is disabled (IMEX_CMD_ENABLED != 1)\n",
    )


@pytest.mark.parametrize("port", ["x5", "-1", "+5", "5 5", "70000"])
def test_a_bad_port_is_not_ready(tools: tuple[Path, Path], tmp_path: Path, port: str) -> None:
    code, out, _ = both(tools, f"--config={config(tmp_path, port)}", "-q")
    assert code == 1
    assert "not a port" in out or "is not ready" in out


def test_a_refused_port_is_not_ready(
    tools: tuple[Path, Path], tmp_path: Path, refused: int
) -> None:
    path = config(tmp_path, refused)
    assert both(tools, f"-c{path}", "-q")[:2] == (
        1,
        f"IMEX daemon at 127.0.0.1:{refused} is not ready\n",
    )


@pytest.mark.parametrize(
    ("answer", "code"),
    [(b"READY\n", 0), (b"READY", 1), (b"STARTING\n", 1), (b"", 1), (b"READY\nREADY\n", 1)],
    ids=["ready", "no-newline", "other", "nothing", "twice"],
)
def test_the_daemons_answer_is_printed_and_only_ready_succeeds(
    tools: tuple[Path, Path],
    tmp_path: Path,
    answering: tuple[int, list[bytes]],
    answer: bytes,
    code: int,
) -> None:
    port, answers = answering
    answers.extend([answer, answer])  # one for each stand-in
    assert both(tools, "-c", config(tmp_path, port), "-q")[:2] == (code, answer.decode())


_VALUES = {
    "IMEX_CMD_ENABLED": st.sampled_from(["1", "0", " 1 ", "", "10", "\t1"]),
    "IMEX_CMD_BIND_INTERFACE_IP": st.sampled_from(["127.0.0.1", "", " 127.0.0.1\t"]),
    "IMEX_CMD_PORT": st.sampled_from(["PORT", " PORT ", "", "0PORT", "x", "PORT0000"]),
}
_NOISE = st.text(alphabet=st.sampled_from(list("ab=# \t")), max_size=8)


@st.composite
def config_texts(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["key", "comment", "noise"]))
        if kind == "key":
            key = draw(st.sampled_from(sorted(_VALUES)))
            pad = draw(st.sampled_from(["", " ", "\t"]))
            lines.append(f"{pad}{key}{pad}={draw(_VALUES[key])}")
        elif kind == "comment":
            lines.append("#" + draw(st.sampled_from(sorted(_VALUES))) + "=1")
        else:
            lines.append(draw(_NOISE))
    ending = draw(st.sampled_from(["\n", ""]))
    return "\n".join(lines) + ending


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=config_texts())
def test_both_read_any_config_alike(
    tools: tuple[Path, Path], tmp_path: Path, refused: int, text: str
) -> None:
    """Blank lines, comments, lines without ``=``, blanks around keys and values, repeated keys
    (the last wins), no final newline: the same outcome from both (the port is one nothing
    listens on, so a config that enables the service ends in "not ready" at that address)."""
    path = tmp_path / "imexd.cfg"
    path.write_text(text.replace("PORT", str(refused)))
    code, _, _ = both(tools, "-c", str(path), "-q")
    assert code == 1
