"""cd-controller's settings: upstream's names and defaults, env twins, ours, and errors."""

from __future__ import annotations

import pytest

from computedomain.api import featuregates, imex
from computedomain.controller import config

REQUIRED = {
    "POD_NAME": "ctl-0",
    "IMAGE_NAME": "registry.example/cd:1",
    "LOG_VERBOSITY_CD_DAEMON": "4",
}


def _parse(argv: list[str] | None = None, **env: str) -> config.ProgramConfig:
    return config.parse(argv or [], {**REQUIRED, **env})


def test_upstream_defaults() -> None:
    cfg = _parse()
    daemon = cfg.controller.daemon
    assert (cfg.pod_name, daemon.namespace, daemon.image, daemon.log_verbosity) == (
        "ctl-0",
        "default",
        "registry.example/cd:1",
        4,
    )
    assert daemon.max_nodes_per_imex_domain == 18
    assert daemon.image_pull_secrets == ()
    assert daemon.feature_gates == featuregates.parse("").render()
    assert (cfg.qps, cfg.burst) == (5.0, 10)
    assert (cfg.http_endpoint, cfg.metrics_path, cfg.kubeconfig) == ("", "/metrics", "")
    assert cfg.leader_election is None
    assert cfg.controller.additional_namespaces == ()
    assert cfg.verbosity == 0
    # ours
    assert cfg.controller.workers == 4
    assert cfg.controller.status_coalesce_window == 0.25
    assert cfg.controller.status_coalesce_max_window == 2.0
    assert (daemon.priority_class_name, daemon.resources, daemon.command) == (
        "",
        {},
        "cd-imex-daemon",
    )
    assert cfg.controller.cleanup_interval == 600.0
    assert (daemon.index_policy, daemon.dns_name_policy, daemon.policy_env) == ("", "", ())


def test_every_setting_from_the_environment() -> None:
    cfg = _parse(
        NAMESPACE="nvidia-dra",
        CD_DAEMON_IMAGE_PULL_SECRET_NAMES="a, b",
        MAX_NODES_PER_IMEX_DOMAIN="8",
        HTTP_ENDPOINT=":8080",
        METRICS_PATH="/m",
        ADDITIONAL_NAMESPACES="old-ns, other",
        KUBECONFIG="/k/config",
        KUBE_API_QPS="50",
        KUBE_API_BURST="100",
        LEADER_ELECTION_ENABLED="true",
        LEADER_ELECTION_LEASE_LOCK_NAMESPACE="nvidia-dra",
        LEADER_ELECTION_LEASE_LOCK_NAME="dra-driver-nvidia-gpu-controller",
        LEADER_ELECTION_LEASE_DURATION="30s",
        LEADER_ELECTION_RENEW_DEADLINE="20s",
        LEADER_ELECTION_RETRY_PERIOD="4s",
        FEATURE_GATES="ComputeDomainCliques=false,",
        V="5",
        WORKERS="4",
        STATUS_COALESCE_WINDOW="100ms",
        CD_DAEMON_PRIORITY_CLASS_NAME="system-node-critical",
        CD_DAEMON_RESOURCES="cpu=100m,memory=64Mi",
        DAEMON_COMMAND="/usr/bin/cd-imex-daemon",
        CLEANUP_INTERVAL="1m",
        INDEX_POLICY="stable-hash",
        DNS_NAME_POLICY=" suffix ",
        CD_DAEMON_POLICY_ENV="CD_DNS_SUFFIX=imex.example.com, OTHER=1",
    )
    daemon = cfg.controller.daemon
    assert cfg.controller.managed_namespaces == ("nvidia-dra", "old-ns", "other")
    assert daemon.image_pull_secrets == ("a", "b")
    assert daemon.max_nodes_per_imex_domain == 8
    assert "ComputeDomainCliques=false," in daemon.feature_gates
    assert not cfg.controller.features.compute_domain_cliques
    assert (cfg.http_endpoint, cfg.metrics_path, cfg.kubeconfig) == (":8080", "/m", "/k/config")
    assert (cfg.qps, cfg.burst, cfg.verbosity) == (50.0, 100, 5)
    assert cfg.leader_election == config.LeaderElection(
        "dra-driver-nvidia-gpu-controller", "nvidia-dra", 30.0, 20.0, 4.0
    )
    assert cfg.controller.workers == 4
    assert cfg.controller.status_coalesce_window == pytest.approx(0.1)
    assert daemon.priority_class_name == "system-node-critical"
    assert daemon.resources == {"requests": {"cpu": "100m", "memory": "64Mi"}}
    assert daemon.command == "/usr/bin/cd-imex-daemon"
    assert cfg.controller.cleanup_interval == 60.0
    assert (daemon.index_policy, daemon.dns_name_policy) == ("stable-hash", "suffix")
    assert daemon.policy_env == (("CD_DNS_SUFFIX", "imex.example.com"), ("OTHER", "1"))


def test_flags_win_over_environment_and_klog_v_works() -> None:
    cfg = _parse(["-v", "6", "--namespace", "flagged", "--workers=3"], NAMESPACE="env", V="2")
    assert (cfg.verbosity, cfg.controller.driver_namespace, cfg.controller.workers) == (
        6,
        "flagged",
        3,
    )
    assert _parse(["-v=7"]).verbosity == 7
    assert _parse(["--metrics-path="]).metrics_path == ""  # an empty path turns metrics off


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"POD_NAME": ""}, "--pod-name/POD_NAME: is required"),
        ({"IMAGE_NAME": ""}, "--image-name/IMAGE_NAME: is required"),
        (
            {"LOG_VERBOSITY_CD_DAEMON": ""},
            "--log-verbosity-cd-daemon/LOG_VERBOSITY_CD_DAEMON: is required",
        ),
        ({"LOG_VERBOSITY_CD_DAEMON": "loud"}, "environment variable LOG_VERBOSITY_CD_DAEMON"),
        ({"LOG_VERBOSITY_CD_DAEMON": "11"}, "LOG_VERBOSITY_CD_DAEMON: must be between 0 and 10"),
        ({"FEATURE_GATES": "Unknown=true"}, "FEATURE_GATES: unrecognized feature gate: Unknown"),
        ({"FEATURE_GATES": "ComputeDomainCliques=maybe"}, "FEATURE_GATES: invalid value"),
        (
            {"FEATURE_GATES": "IMEXDaemonsWithDNSNames=false"},
            "ComputeDomainCliques requires IMEXDaemonsWithDNSNames",
        ),
        ({"NAMESPACE": "Bad_NS"}, "NAMESPACE: 'Bad_NS' is not a valid DNS-1123 label"),
        ({"MAX_NODES_PER_IMEX_DOMAIN": "0"}, "MAX_NODES_PER_IMEX_DOMAIN: must be greater than 0"),
        ({"WORKERS": "0"}, "WORKERS: must be greater than 0"),
        ({"STATUS_COALESCE_WINDOW": "soon"}, "environment variable STATUS_COALESCE_WINDOW"),
        (
            {"STATUS_COALESCE_WINDOW": "1s", "STATUS_COALESCE_MAX_WINDOW": "500ms"},
            "STATUS_COALESCE_MAX_WINDOW: must not be below STATUS_COALESCE_WINDOW",
        ),
        ({"CD_DAEMON_RESOURCES": "cpu=lots"}, "CD_DAEMON_RESOURCES: cpu: 'lots'"),
        ({"CD_DAEMON_IMAGE_PULL_SECRET_NAMES": "UPPER"}, "CD_DAEMON_IMAGE_PULL_SECRET_NAMES"),
        ({"ADDITIONAL_NAMESPACES": "a,B"}, "ADDITIONAL_NAMESPACES"),
        (
            {"LEADER_ELECTION_ENABLED": "true", "LEADER_ELECTION_RENEW_DEADLINE": "20s"},
            "LEADER_ELECTION_LEASE_DURATION: must be longer than LEADER_ELECTION_RENEW_DEADLINE",
        ),
        (
            {"LEADER_ELECTION_ENABLED": "true", "LEADER_ELECTION_RETRY_PERIOD": "9s"},
            "LEADER_ELECTION_RENEW_DEADLINE: must be longer than 1.2 x",
        ),
        ({"LEADER_ELECTION_ENABLED": "perhaps"}, "environment variable LEADER_ELECTION_ENABLED"),
        ({"INDEX_POLICY": "stable hash"}, "INDEX_POLICY: 'stable hash' is not a policy name"),
        ({"DNS_NAME_POLICY": "a\tb"}, "DNS_NAME_POLICY: 'a\\tb' is not a policy name"),
        ({"CD_DAEMON_POLICY_ENV": "NODE_NAME=x"}, "CD_DAEMON_POLICY_ENV: NODE_NAME is set by"),
    ],
    ids=lambda v: next(iter(v)) if isinstance(v, dict) else None,
)
def test_bad_settings_exit_2_naming_the_setting(
    env: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        config.load([], {k: v for k, v in {**REQUIRED, **env}.items() if v != ""})
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_imex_defaults_are_driver_managed_domain() -> None:
    cfg = _parse()
    assert cfg.controller.imex == imex.Settings(imex.Mode.DRIVER_MANAGED, imex.Isolation.DOMAIN)
    assert cfg.controller.features.compute_domain_cliques


def test_host_managed_forces_the_daemon_gates_off() -> None:
    cfg = _parse(
        IMEX_MODE="hostManaged",
        IMEX_ISOLATION="",
        FEATURE_GATES="HostManagedIMEXDaemon=true,ComputeDomainCliques=true",
    )
    assert cfg.controller.imex.host_managed
    assert not cfg.controller.features.compute_domain_cliques
    assert not cfg.controller.features.imex_daemons_with_dns_names


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"IMEX_MODE": "hostManaged"},
            'imex configuration validation failed: imex.mode="hostManaged" requires the '
            "HostManagedIMEXDaemon feature gate to be enabled",
        ),
        (
            {"IMEX_ISOLATION": "channel"},
            'imex configuration validation failed: imex.isolation="channel" is not supported',
        ),
        ({"IMEX_MODE": "x"}, 'imex configuration validation failed: unknown imex.mode "x"'),
    ],
    ids=["no-gate", "channel", "unknown"],
)
def test_bad_imex_settings_exit_2(
    env: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        config.load([], {**REQUIRED, **env})
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_positional_arguments_are_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        config.load(["extra"], REQUIRED)
    assert info.value.code == 2
    assert "unrecognized arguments: extra" in capsys.readouterr().err


def test_every_upstream_setting_is_declared_with_its_env_twin() -> None:
    declared = {o.env: o.flag for o in config.OPTIONS}
    upstream = [
        "POD_NAME", "NAMESPACE", "IMAGE_NAME", "CD_DAEMON_IMAGE_PULL_SECRET_NAMES",
        "LOG_VERBOSITY_CD_DAEMON", "MAX_NODES_PER_IMEX_DOMAIN", "HTTP_ENDPOINT", "METRICS_PATH",
        "PPROF_PATH", "ADDITIONAL_NAMESPACES", "KUBECONFIG", "KUBE_API_QPS", "KUBE_API_BURST",
        "LEADER_ELECTION_ENABLED", "LEADER_ELECTION_LEASE_LOCK_NAMESPACE",
        "LEADER_ELECTION_LEASE_LOCK_NAME", "LEADER_ELECTION_LEASE_DURATION",
        "LEADER_ELECTION_RENEW_DEADLINE", "LEADER_ELECTION_RETRY_PERIOD", "FEATURE_GATES",
        "IMEX_MODE", "IMEX_ISOLATION",
    ]  # fmt: skip
    for env in upstream:
        assert declared[env] == "--" + env.lower().replace("_", "-")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import computedomain
    from computedomain.controller import main

    with pytest.raises(SystemExit) as exited:
        main.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == computedomain.__version__
