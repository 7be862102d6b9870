"""Flags with environment twins: precedence, types, aliases, sub-commands, and errors naming
both names (ConfigError from parse, usage and status 2 from load)."""

from __future__ import annotations

import copy
import pickle
import re

import pytest

from computedomain.api.errors import ConfigError
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


def parse(argv: list[str], env: dict[str, str] | None = None) -> f.Values:
    return f.FlagSet("prog", OPTIONS).parse(argv, env or {})


def load(argv: list[str], env: dict[str, str] | None = None) -> f.Values:
    return f.FlagSet("prog", OPTIONS).load(lambda values: values, argv, env or {})


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


def test_empty_required_string_is_missing() -> None:
    with pytest.raises(ConfigError, match=r"^--pod-name/POD_NAME: is required$"):
        parse([], {"POD_NAME": ""})


def test_missing_required_names_flag_and_env(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        load([])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: prog")
    assert "prog: error: --pod-name/POD_NAME: is required" in err


def test_every_missing_setting_is_named() -> None:
    options = (*OPTIONS, f.Option("--node-name", "NODE_NAME", required=True))
    with pytest.raises(ConfigError, match=r"^--pod-name/POD_NAME, --node-name/NODE_NAME: are"):
        f.FlagSet("prog", options).parse([], {})


def test_bad_env_value_names_the_variable(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        load(["--pod-name=x"], {"KUBE_API_BURST": "lots"})
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--kube-api-burst/KUBE_API_BURST: 'lots' is not an integer" in err
    assert "(from the environment variable KUBE_API_BURST)" in err


def test_bad_flag_value_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"'lots' is not an integer \(from the flag --kube-api"):
        parse(["--pod-name", "p", "--kube-api-burst", "lots"], {"KUBE_API_BURST": "3"})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["extra"], "unrecognized arguments: extra"),
        (["--other", "1"], "unrecognized arguments: --other 1"),
        (["--pod", "p"], "unrecognized arguments: --pod p"),  # no abbreviations
        (["--pod-name"], "expected one argument"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(argv, {"POD_NAME": "p"})


def test_a_program_error_is_reported_as_the_setting_it_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def resolve(values: f.Values) -> f.Values:
        raise ConfigError("KUBE_API_QPS", "must be greater than 0")

    with pytest.raises(SystemExit) as info:
        f.FlagSet("prog", OPTIONS).load(resolve, ["--pod-name=p"], {})
    assert info.value.code == 2
    assert "prog: error: --kube-api-qps/KUBE_API_QPS: must be greater than 0" in (
        capsys.readouterr().err
    )


def test_aliases_and_the_first_set_variable() -> None:
    options = (
        f.Option("--v", "V", f.integer, default=0, aliases=("-v",), env_aliases=("LOG_V",)),
        f.Option("--root", "ROOT", aliases=("--old-root",), env_aliases=("OLD_ROOT",), dest="r"),
    )
    flag_set = f.FlagSet("prog", options)
    assert flag_set.parse(["-v", "3"], {}).v == 3
    assert flag_set.parse(["-v=4"], {}).v == 4
    assert flag_set.parse([], {"LOG_V": "5"}).v == 5
    assert flag_set.parse([], {"V": "6", "LOG_V": "5"}).v == 6
    assert flag_set.parse(["--old-root", "/a"], {"ROOT": "/b"}).r == "/a"
    assert flag_set.parse([], {"OLD_ROOT": "/c"}).r == "/c"


def test_sub_commands_before_or_after_the_flags() -> None:
    flag_set = f.FlagSet("prog", OPTIONS, commands=("run", "check"))
    ns = flag_set.parse(["--pod-name", "run", "check", "--kube-api-burst=3"], {})
    assert (ns.command, ns.pod_name, ns.kube_api_burst) == ("check", "run", 3)
    with pytest.raises(ConfigError, match=re.escape("a sub-command is required: run | check")):
        flag_set.parse(["--pod-name=p"], {})
    with pytest.raises(ConfigError, match="invalid choice: 'go'"):
        flag_set.parse(["--pod-name=p", "go"], {})


def test_version_prints_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        f.FlagSet("prog", OPTIONS, version="1.2.3").parse(["--version"], {})
    assert info.value.code == 0
    assert capsys.readouterr().out == "1.2.3\n"


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
        "flag": "--pod-name", "flags": ("--pod-name",), "env": "POD_NAME", "envs": ("POD_NAME",),
        "type": "string", "default": None, "required": True, "help": "this pod's name",
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
    assert len({option, f.Option("--pod-name", "POD_NAME", default="x")}) == 1
    with pytest.raises(AttributeError):
        setattr(option, "flag", "--node-name")  # noqa: B010
    assert (option.flag, option.dest, option.label) == (
        "--pod-name",
        "pod_name",
        "--pod-name/POD_NAME",
    )
    assert copy.copy(option) == copy.deepcopy(option) == option
    assert pickle.loads(pickle.dumps(option)) == option
