"""Flags and environment: upstream names and defaults, every path overridable, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.api.errors import ConfigError
from computedomain.kubeletplugin import config
from computedomain.nvml import fake
from computedomain.nvml.interface import BackendName


def test_production_defaults() -> None:
    cfg = config.parse([], {"NODE_NAME": "n1"})
    assert cfg.namespace == "default"
    assert cfg.cdi_root == Path("/etc/cdi")
    assert cfg.registration_socket == Path(
        "/var/lib/kubelet/plugins_registry/compute-domain.nvidia.com-reg.sock"
    )
    assert cfg.dra_socket == Path("/var/lib/kubelet/plugins/compute-domain.nvidia.com/dra.sock")
    assert cfg.lock_path == Path("/var/lib/kubelet/plugins/compute-domain.nvidia.com/pu.lock")
    assert cfg.domains_dir == Path("/var/lib/kubelet/plugins/compute-domain.nvidia.com/domains")
    assert cfg.proc_devices == Path("/proc/devices")
    assert cfg.fabric_imex_mgmt == Path("/proc/driver/nvidia/capabilities/fabric-imex-mgmt")
    assert cfg.boot_id_path == Path("/proc/sys/kernel/random/boot_id")
    assert (cfg.host_driver_root, cfg.container_driver_root) == (Path("/"), Path("/driver-root"))
    assert cfg.healthcheck_port == -1
    assert (cfg.kube_api_qps, cfg.kube_api_burst) == (5.0, 10)
    assert cfg.nvml_backend is BackendName.REAL
    assert cfg.fake_nvml_profile is fake.Profile.GB200
    assert cfg.features.crash_on_nvlink_fabric_errors
    assert cfg.channel_strategy_map == {}
    assert cfg.cleanup_interval == 600.0


def test_every_path_overridable_by_env_and_flag_wins() -> None:
    env = {
        "NODE_NAME": "env-node",
        "CDI_ROOT": "/x/cdi",
        "KUBELET_REGISTRAR_DIRECTORY_PATH": "/x/reg",
        "KUBELET_PLUGINS_DIRECTORY_PATH": "/x/plugins",
        "ALT_PROC_DEVICES_PATH": "/x/devices",
        "DRIVER_ROOT_CTR_PATH": "/x/driver",
        "HOST_DRIVER_ROOT": "/x/host",
        "BOOT_ID_PATH": "/x/boot_id",
        "NVML_BACKEND": "fake",
        "FAKE_NVML_PROFILE": "h100",
        "FAKE_NVML_CLIQUE": "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.9",
        "CHANNEL_STRATEGY_MAP": "Single=per-domain, All=All",
        "FEATURE_GATES": "ComputeDomainCliques=false,",
        "CLEANUP_INTERVAL": "1h30m",
        "V": "4",
    }
    cfg = config.parse(["--node-name", "flag-node"], env)
    assert cfg.node_name == "flag-node"
    assert cfg.dra_socket == Path("/x/plugins/compute-domain.nvidia.com/dra.sock")
    assert cfg.registration_socket.parent == Path("/x/reg")
    assert cfg.proc_devices == Path("/x/devices")
    # Mock mode: the capability file lives under the container driver root (upstream's rule).
    assert cfg.fabric_imex_mgmt == Path(
        "/x/driver/proc/driver/nvidia/capabilities/fabric-imex-mgmt"
    )
    assert cfg.host_driver_root == Path("/x/host")
    assert cfg.boot_id_path == Path("/x/boot_id")
    assert cfg.fake_nvml_profile is fake.Profile.H100
    assert cfg.channel_strategy_map == {"Single": "per-domain", "All": "All"}
    assert not cfg.features.compute_domain_cliques
    assert cfg.cleanup_interval == 5400.0
    assert cfg.verbosity == 4


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        ([], {}, "--node-name/NODE_NAME: is required"),
        ([], {"NODE_NAME": ""}, "--node-name/NODE_NAME: is required"),
        (["extra"], {"NODE_NAME": "n"}, "unrecognized arguments: extra"),
        ([], {"NODE_NAME": "n", "NVML_BACKEND": "gpu"}, "--nvml-backend/NVML_BACKEND: unknown"),
        ([], {"NODE_NAME": "n", "FAKE_NVML_PROFILE": "a100"}, "FAKE_NVML_PROFILE: unknown profile"),
        ([], {"NODE_NAME": "n", "FAKE_NVML_CLIQUE": "bad"}, "FAKE_NVML_CLIQUE: 'bad' is not"),
        (
            [],
            {"NODE_NAME": "n", "HEALTHCHECK_PORT": "x"},
            "HEALTHCHECK_PORT: 'x' is not an integer",
        ),
        ([], {"NODE_NAME": "n", "FEATURE_GATES": "Nope=true"}, "unrecognized feature gate: Nope"),
        ([], {"NODE_NAME": "n", "CHANNEL_STRATEGY_MAP": "Single"}, "'Single' is not Mode=strategy"),
        ([], {"NODE_NAME": "n", "CLEANUP_INTERVAL": "soon"}, "'soon' is not a duration"),
    ],
)
def test_errors_name_the_setting(argv: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config.parse(argv, env)
    assert message in str(err.value)


def test_flag_set_describes_every_setting() -> None:
    rows = {row["env"]: row for row in config.flag_set().describe()}
    assert rows["NODE_NAME"]["required"]
    assert rows["NVIDIA_DRIVER_ROOT"]["flags"] == ("--nvidia-driver-root", "--host-driver-root")
    assert rows["NVIDIA_DRIVER_ROOT"]["envs"] == ("NVIDIA_DRIVER_ROOT", "HOST_DRIVER_ROOT")
    assert rows["V"]["flags"] == ("--v", "-v")
    assert rows["V"]["envs"] == ("V", "LOG_VERBOSITY")
    assert {"NVML_BACKEND", "FAKE_NVML_PROFILE", "FAKE_NVML_CLIQUE", "BOOT_ID_PATH"} <= set(rows)
    assert {"CHANNEL_STRATEGY_MAP", "ALT_PROC_DEVICES_PATH", "DRIVER_ROOT_CTR_PATH"} <= set(rows)
    assert rows["KUBELET_PLUGINS_DIRECTORY_PATH"]["default"] == "/var/lib/kubelet/plugins"


def test_verbosity_range() -> None:
    with pytest.raises(ConfigError, match="11 is not between 0 and 10"):
        config.parse(["-v", "11"], {"NODE_NAME": "n"})


@pytest.mark.parametrize(
    ("env", "health", "http"),
    [
        ({}, "[::]:51515", ":8081"),
        ({"POD_IP": "10.1.2.3"}, "10.1.2.3:51515", "10.1.2.3:8081"),
        ({"POD_IP": "fd00::7"}, "[fd00::7]:51515", "[fd00::7]:8081"),
        ({"POD_IP": "10.1.2.3", "HTTP_ENDPOINT": "127.0.0.1:9000"}, "10.1.2.3:51515", None),
    ],
    ids=["no pod IP: all addresses", "IPv4 pod", "IPv6 pod", "explicit HTTP host wins"],
)
def test_endpoints_listen_on_the_pod_ip(env: dict[str, str], health: str, http: str | None) -> None:
    settings = {"NODE_NAME": "n", "HEALTHCHECK_PORT": "51515", "HTTP_ENDPOINT": ":8081", **env}
    cfg = config.parse([], settings)
    assert cfg.health_address == health
    assert cfg.http_address == (http or settings["HTTP_ENDPOINT"])


def test_a_bad_pod_ip_is_named() -> None:
    with pytest.raises(ConfigError, match=r"--pod-ip/POD_IP: 'x\.y' is not an IP address"):
        config.parse([], {"NODE_NAME": "n", "POD_IP": "x.y"})


def test_imex_defaults() -> None:
    cfg = config.parse([], {"NODE_NAME": "n1"})
    assert not cfg.imex.host_managed
    assert cfg.imex_host_socket_path == "/etc/nvidia-imex/imex_ctrl.sock"


def test_host_managed_forces_no_gate_on_the_plugin() -> None:
    cfg = config.parse(
        ["--imex-mode=hostManaged", "--imex-host-socket-path=/run/imex//ctl.sock"],
        {"NODE_NAME": "n1", "FEATURE_GATES": "HostManagedIMEXDaemon=true"},
    )
    assert cfg.imex.host_managed
    assert cfg.imex_host_socket_path == "/run/imex/ctl.sock"
    assert cfg.features.compute_domain_cliques  # unlike the controller's


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"IMEX_MODE": "hostManaged"},
            'IMEX_MODE: imex configuration validation failed: imex.mode="hostManaged" requires '
            "the HostManagedIMEXDaemon feature gate to be enabled",
        ),
        (
            {"IMEX_ISOLATION": "bogus"},
            'IMEX_ISOLATION: imex configuration validation failed: unknown imex.isolation "bogus": '
            'must be "domain" or "channel"',
        ),
        (
            {"IMEX_HOST_SOCKET_PATH": "imex.sock"},
            "--imex-host-socket-path/IMEX_HOST_SOCKET_PATH: 'imex.sock' is not an absolute path",
        ),
    ],
    ids=["gate", "isolation", "relative-socket"],
)
def test_bad_imex_settings_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config.parse([], {"NODE_NAME": "n1", **env})
    assert str(info.value).startswith(message)
