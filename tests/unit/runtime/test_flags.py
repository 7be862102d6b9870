"""Flags with environment twins: precedence, types, and errors naming both names."""

from __future__ import annotations

import copy
import io
import pickle
import shutil
import subprocess
import sys

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from computedomain.runtime import flags as f

OPTIONS = (
    f.Option("--pod-name", "POD_NAME", required=True, help="this pod's name"),
    f.Option("--kube-api-qps", "KUBE_API_QPS", f.number, default=5.0),
    f.Option("--kube-api-burst", "KUBE_API_BURST", f.integer, default=10),
    f.Option("--leader-election-enabled", "LEADER_ELECTION_ENABLED", f.boolean, default=False),
    f.Option("--lease-duration", "LEADER_ELECTION_LEASE_DURATION", f.duration, default=15.0),
    f.Option("--additional-namespaces", "ADDITIONAL_NAMESPACES", f.string_list, default=()),
    f.Option("--metrics-path", "METRICS_PATH", default="/metrics"),
)


def parse(argv: list[str], env: dict[str, str] | None = None) -> object:
    return f.FlagSet("prog", OPTIONS).parse(argv, env or {})


def test_flag_beats_env_beats_default() -> None:
    ns = parse(["--pod-name", "p1", "--kube-api-qps", "7"], {"KUBE_API_QPS": "9", "POD_NAME": "p2"})
    assert ns.pod_name == "p1"  # type: ignore[attr-defined]
    assert ns.kube_api_qps == 7.0  # type: ignore[attr-defined]
    ns = parse([], {"POD_NAME": "p2", "KUBE_API_BURST": "20"})
    assert ns.pod_name == "p2"  # type: ignore[attr-defined]
    assert ns.kube_api_burst == 20  # type: ignore[attr-defined]
    assert ns.kube_api_qps == 5.0  # type: ignore[attr-defined]
    assert ns.additional_namespaces == ()  # type: ignore[attr-defined]


def test_empty_env_leaves_a_typed_setting_at_its_default() -> None:
    ns = parse(["--pod-name=x"], {"KUBE_API_BURST": "", "ADDITIONAL_NAMESPACES": ""})
    assert ns.kube_api_burst == 10  # type: ignore[attr-defined]
    assert ns.additional_namespaces == ()  # type: ignore[attr-defined]


def test_empty_env_sets_a_string_setting_to_empty() -> None:
    """Upstream's METRICS_PATH="" turns metrics off; an unset variable keeps the default."""
    assert parse(["--pod-name=x"], {"METRICS_PATH": ""}).metrics_path == ""  # type: ignore[attr-defined]
    assert parse(["--pod-name=x"], {}).metrics_path == "/metrics"  # type: ignore[attr-defined]


def test_empty_required_string_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse([], {"POD_NAME": ""})
    assert info.value.code == 2
    assert "POD_NAME" in capsys.readouterr().err


def test_missing_required_names_flag_and_env(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse([])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--pod-name" in err
    assert "POD_NAME" in err


def test_bad_env_value_names_the_variable(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--pod-name=x"], {"KUBE_API_BURST": "lots"})
    err = capsys.readouterr().err
    assert "environment variable KUBE_API_BURST" in err
    assert "'lots' is not an integer" in err


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["--leader-election-enabled"], {}, True),
        (["--leader-election-enabled=false"], {}, False),
        ([], {"LEADER_ELECTION_ENABLED": "1"}, True),
        ([], {"LEADER_ELECTION_ENABLED": "FALSE"}, False),
        ([], {}, False),
    ],
    ids=["bare", "explicit-false", "env-1", "env-FALSE", "default"],
)
def test_booleans(argv: list[str], env: dict[str, str], expected: bool) -> None:
    ns = parse(["--pod-name=x", *argv], env)
    assert ns.leader_election_enabled is expected  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15.0), ("2m", 120.0), ("1h30m", 5400.0), ("300ms", 0.3), ("1.5h", 5400.0),
     ("0", 0.0), ("10", 10.0), ("-1s", -1.0), ("1m0.5s", 60.5)],
)  # fmt: skip
def test_go_durations(text: str, seconds: float) -> None:
    assert f.duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "1x", "1h 30m", "m5", "5s3"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        f.duration(text)


def test_bool_parser_rejects_junk() -> None:
    with pytest.raises(ValueError, match="true/false/1/0"):
        f.boolean("maybe")


def test_options_are_introspectable_for_the_docs() -> None:
    rows = f.FlagSet("prog", OPTIONS).describe()
    assert [r["env"] for r in rows] == [o.env for o in OPTIONS]
    assert rows[0] == {
        "flag": "--pod-name", "env": "POD_NAME", "type": "string", "default": None,
        "required": True, "help": "this pod's name",
    }  # fmt: skip
    assert rows[4]["type"] == "duration"


def test_declaration_mistakes_are_caught() -> None:
    with pytest.raises(ValueError, match="must start with --"):
        f.Option("pod-name", "POD_NAME")
    with pytest.raises(ValueError, match="UPPER_SNAKE_CASE"):
        f.Option("--pod-name", "pod-name")
    with pytest.raises(ValueError, match="declared twice"):
        f.FlagSet("prog", [f.Option("--a", "A"), f.Option("--b", "A")])


def test_help_mentions_env_and_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        f.FlagSet("prog", OPTIONS).parse(["--help"], {})
    out = capsys.readouterr().out
    assert "[env KUBE_API_QPS]" in out
    assert "(default 5.0)" in out
    assert "(required)" in out


def test_an_option_is_an_immutable_value() -> None:
    option = f.Option("--pod-name", "POD_NAME", default="x")
    assert option == f.Option("--pod-name", "POD_NAME", default="x")
    assert option != f.Option("--pod-name", "POD_NAME", default="y")
    assert option != ("--pod-name", "POD_NAME")
    assert len({option, f.Option("--pod-name", "POD_NAME", default="x")}) == 1
    assert repr(option).startswith("Option(flag='--pod-name', env='POD_NAME', type=<function ")
    with pytest.raises(AttributeError, match="immutable"):
        setattr(option, "flag", "--node-name")  # noqa: B010
    assert option.flag == "--pod-name"
    assert copy.copy(option) == copy.deepcopy(option) == option
    assert pickle.loads(pickle.dumps(option)) == option


def test_the_flags_load_without_attrs() -> None:
    # cd-imex-daemon check declares and parses its settings here in every probe, once a second
    # per daemon pod; importing attrs would cost it more than the rest of its start-up.
    code = (
        "import sys\n"
        "import computedomain.runtime.flags\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('attr', 'attrs')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("columns", "width"), [("50", 48), ("0", 78), ("-3", 78), ("wide", 78), (None, 78)]
)
def test_help_width_follows_shutil_rules(
    monkeypatch: pytest.MonkeyPatch, columns: str | None, width: int
) -> None:
    """$COLUMNS when positive, else the terminal of stdout (none under pytest's capture: a
    pipe), else 80; less the 2 argparse takes off. What shutil.get_terminal_size gives."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(sys, "__stdout__", io.StringIO())  # no terminal behind it
    assert f._help_width() == width
    if columns != "wide":  # shutil itself raises on a non-number
        assert f._help_width() == shutil.get_terminal_size((80, 24)).columns - 2


_FLAGS = [o.flag for o in OPTIONS]
_VALUES = st.text(max_size=6) | st.sampled_from(["", "-1", "--pod-name", "a=b", " -x", "7"])


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([*_FLAGS, "--pod", "--other", "-h", "x"]), st.booleans(), _VALUES
        ),
        max_size=5,
    )
)
def test_the_direct_reader_agrees_with_argparse(items: list[tuple[str, bool, str]]) -> None:
    """Whatever command line the direct reader accepts, argparse reads to the same values (and
    what it declines, argparse reads or rejects as before: parse() hands it over)."""
    args: list[str] = []
    for name, joined, value in items:
        args += [f"{name}={value}"] if joined else [name, value]
    flag_set = f.FlagSet("prog", OPTIONS)
    simple = flag_set.read_simple(args)
    event("read directly" if simple is not None else "handed to argparse")
    if simple is not None:
        raw = vars(flag_set._argparser().parse_args(args))
        assert simple == {dest: value for dest, value in raw.items() if value is not None}


def test_the_direct_reader_takes_the_probe_command_line_and_declines_the_rest() -> None:
    flag_set = f.FlagSet("prog", OPTIONS)
    assert flag_set.read_simple(["--kube-api-qps", "7", "--pod-name=p"]) == {
        "kube_api_qps": "7", "pod_name": "p"
    }  # fmt: skip
    for declined in (["--help"], ["--pod", "p"], ["--leader-election-enabled"], ["p"],
                     ["--pod-name"], ["--pod-name", "-p"]):  # fmt: skip
        assert flag_set.read_simple(declined) is None
    assert flag_set._parser is None  # nothing above needed argparse


def test_a_usage_error_on_the_direct_path_still_prints_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        parse(["--pod-name", "p", "--kube-api-burst", "lots"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: prog")
    assert "invalid value for flag --kube-api-burst: 'lots' is not an integer" in err
