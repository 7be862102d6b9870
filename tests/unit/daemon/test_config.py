"""Flags, their environment twins, and what ``run`` requires."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.api.errors import ConfigError
from computedomain.daemon import config, main, modes

CLIQUE = "2df84740-d3cb-b5ce-4e7e-98352b5a71b5.1"
ENV = {
    "CLIQUE_ID": CLIQUE,
    "COMPUTE_DOMAIN_UUID": "0f4c2a3e-8d5b-4e1f-9a7c-6b2d1e0f3a4b",
    "COMPUTE_DOMAIN_NAME": "cd",
    "NODE_NAME": "n1",
    "POD_IP": "10.0.0.1",
    "POD_UID": "uid",
    "POD_NAME": "daemon",
    "POD_NAMESPACE": "driver",
    "MAX_NODES_PER_IMEX_DOMAIN": "18",
    "FEATURE_GATES": "AllAlpha=false,",
}


def load(argv: list[str], env: dict[str, str]) -> config.DaemonConfig:
    return config.parse(argv, env)


def test_upstreams_environment_and_production_defaults() -> None:
    settings = load(["-v", "6", "run"], ENV)
    assert settings.clique_id == CLIQUE
    assert settings.max_nodes == 18
    assert settings.verbosity == 6
    assert settings.cd_namespace == "default"
    assert settings.imexd_dir == Path("/imexd")
    assert settings.config_path == Path("/imexd/imexd.cfg")
    assert settings.hosts_file == Path("/etc/hosts")
    assert settings.kubeconfig is None
    assert (settings.imex_binary, settings.imex_ctl_binary) == ("nvidia-imex", "nvidia-imex-ctl")
    assert settings.reload_interval == 5.0
    assert settings.features.compute_domain_cliques
    settings.validate_run()


def test_flags_before_or_after_the_command_beat_the_environment(tmp_path: Path) -> None:
    argv = ["--imexd-dir", str(tmp_path), "check", "--hosts-file=/tmp/h"]
    argv += ["--imex-reload-interval", "300ms"]
    settings = load(argv, {**ENV, "IMEXD_DIR": "/elsewhere", "INDEX_POLICY": "stable-hash"})
    assert settings.imexd_dir == tmp_path
    assert settings.hosts_file == Path("/tmp/h")
    assert settings.reload_interval == pytest.approx(0.3)
    assert settings.index_policy == "stable-hash"


def test_flag_values_that_look_like_commands_stay_values() -> None:
    settings = load(["--node-name", "run", "check"], ENV)
    assert (settings.command, settings.node_name) == ("check", "run")
    assert load(["-v=4", "run"], ENV).verbosity == 4


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "a sub-command is required: run | check"),
        (["start"], "invalid choice: 'start'"),
        (["run", "check"], "unrecognized arguments: check"),
    ],
)
def test_the_sub_command_is_one_of_two(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(argv, ENV)


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"COMPUTE_DOMAIN_UUID": ""}, ""),
        ({"COMPUTE_DOMAIN_UUID": "../etc"}, "COMPUTE_DOMAIN_UUID"),
        ({"POD_NAME": ""}, "POD_NAME"),
        ({"NODE_NAME": ""}, "NODE_NAME"),
        ({"POD_IP": ""}, "POD_IP"),
        ({"MAX_NODES_PER_IMEX_DOMAIN": "-1"}, "MAX_NODES_PER_IMEX_DOMAIN"),
    ],
    ids=["no-cdi", "unsafe-uid", "no-pod-name", "no-node", "no-ip", "negative-max"],
)
def test_run_refuses_incomplete_settings(override: dict[str, str], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(["run"], {**ENV, **override}).validate_run()
    assert info.value.field == field
    if not field:
        assert str(info.value) == config.CDI_MISSING


def test_no_op_mode_needs_no_node_or_ip() -> None:
    load(["run"], {**ENV, "CLIQUE_ID": "", "NODE_NAME": "", "POD_IP": ""}).validate_run()


def test_a_malformed_clique_id_is_refused() -> None:
    with pytest.raises(ConfigError, match="CLIQUE_ID"):
        load(["run"], {**ENV, "CLIQUE_ID": "../x"})


@pytest.mark.parametrize(
    ("gates", "mode"),
    [
        ("", modes.CLIQUES),
        ("ComputeDomainCliques=false", modes.STATUS_DNS),
        ("ComputeDomainCliques=false,IMEXDaemonsWithDNSNames=false", modes.STATUS_IPS),
    ],
)
def test_the_gates_pick_one_of_three_modes(gates: str, mode: modes.Mode) -> None:
    assert modes.select(load(["run"], {**ENV, "FEATURE_GATES": gates}).features) is mode


def test_cliques_without_dns_names_are_rejected() -> None:
    with pytest.raises(ConfigError, match="feature gate validation failed"):
        load(["run"], {**ENV, "FEATURE_GATES": "IMEXDaemonsWithDNSNames=false"})


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"CLIQUE_ID": "../x"}, "CLIQUE_ID: '../x' is not a clique ID"),
        ({"IMEX_RELOAD_INTERVAL": "-1s"}, "IMEX_RELOAD_INTERVAL: must not be negative"),
        ({"FEATURE_GATES": "IMEXDaemonsWithDNSNames=false"}, "FEATURE_GATES: feature gate"),
    ],
    ids=["clique-id", "interval", "gates"],
)
def test_check_refuses_what_run_refuses_before_asking(
    override: dict[str, str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in {**ENV, **override, "IMEX_CTL_BINARY": "/nonexistent/ctl"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        main.main(["check"])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
