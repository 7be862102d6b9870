"""``FEATURE_GATES`` strings: every program either resolves them or stops at once with a clear
error naming FEATURE_GATES and the offending item — never a traceback, never another exception.

The parser (:func:`computedomain.api.featuregates.parse`) and each program's configuration
parsing run in-process under Hypothesis; each program runs once as a real process with a bad
value to check its exit status and output (cd-kubelet-plugin: 1, cd-controller: 2, its usage
error). The IMEX daemon joins when it lands on main.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from computedomain.api import featuregates
from computedomain.api.errors import ConfigError
from computedomain.controller import config as controller_config
from computedomain.kubeletplugin import config as plugin_config
from tests.faults import settings as suite

NAMES = sorted(featuregates.KNOWN_GATES)
VALUES = ["true", "false", "1", "0", "t", "F", "TRUE", "False", "yes", "", "maybe", " true "]
ITEMS = st.one_of(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)).map(lambda t: f"{t[0]}={t[1]}"),
    st.sampled_from(NAMES),  # no value
    st.tuples(st.text(max_size=10), st.sampled_from(VALUES)).map(lambda t: f"{t[0]}={t[1]}"),
    st.text(max_size=12),
)
GATES = st.one_of(
    st.lists(ITEMS, max_size=5).map(",".join),
    st.text(max_size=40),
)
SETTINGS = settings(max_examples=suite.examples(150, 1500), deadline=None)
CONTROLLER_ENV = {
    "POD_NAME": "controller-0",
    "IMAGE_NAME": "registry.example/cd:1",
    "LOG_VERBOSITY_CD_DAEMON": "1",
}


def resolve(text: str) -> featuregates.Features | ConfigError:
    try:
        return featuregates.parse(text)
    except ConfigError as exc:
        return exc


@SETTINGS
@given(text=GATES)
@example(text="ComputeDomainCliques=true,IMEXDaemonsWithDNSNames=false")
@example(text="AllAlpha=true")
@example(text="NoSuchGate=true")
@example(text="MPSSupport")
def test_the_parser_resolves_or_names_the_problem(text: str) -> None:
    outcome = resolve(text)
    if isinstance(outcome, ConfigError):
        assert outcome.field == "FEATURE_GATES"
        assert outcome.reason
        return
    # Resolved: rendering it for the daemons and parsing that again changes nothing.
    assert featuregates.parse(outcome.render()) == outcome


@SETTINGS
@given(text=GATES)
def test_the_plugin_configuration(text: str) -> None:
    env = {"NODE_NAME": "node-1", "FEATURE_GATES": text}
    expected = resolve(text)
    if isinstance(expected, ConfigError):
        with pytest.raises(ConfigError) as caught:
            plugin_config.parse([], env)
        assert str(caught.value) == str(expected)
    else:
        assert plugin_config.parse([], env).features == expected


@settings(max_examples=suite.examples(40, 400), deadline=None)
@given(text=GATES)
def test_the_controller_configuration(text: str) -> None:
    env = {**CONTROLLER_ENV, "FEATURE_GATES": text}
    expected = resolve(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        if not isinstance(expected, ConfigError):
            assert controller_config.load([], env).controller.features == expected
            return
        with pytest.raises(SystemExit) as caught:
            controller_config.load([], env)
    assert caught.value.code == 2
    assert str(expected) in err.getvalue()
    assert "Traceback" not in err.getvalue()


BAD = "ComputeDomainCliques=maybe"


def run_program(
    argv: list[str], env: dict[str, str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    binary = Path(sys.executable).with_name(argv[0])
    return subprocess.run(
        [str(binary), *argv[1:]],
        env={**os.environ, "KUBECONFIG": str(tmp_path / "none"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["cd-kubelet-plugin"], {"NODE_NAME": "node-1"}),
        (["cd-controller"], CONTROLLER_ENV),
        (["cd-imex-daemon", "run"], {}),
        (["cd-imex-daemon", "check"], {}),
    ],
    ids=["plugin", "controller", "daemon-run", "daemon-check"],
)
def test_each_program_stops_with_status_2_naming_the_setting(
    argv: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    done = run_program(argv, {**env, "FEATURE_GATES": BAD}, tmp_path)
    assert done.returncode == 2, done.stderr
    message = str(resolve(BAD))
    assert message.startswith("FEATURE_GATES: invalid value of ComputeDomainCliques=maybe")
    assert f"{argv[0]}: error: --feature-gates/{message}" in done.stderr
    assert done.stderr.startswith(f"usage: {argv[0]}")
    assert "Traceback" not in done.stderr
