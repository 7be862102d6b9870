"""cd-kubelet-plugin's configuration: flags, their environment twins, and the frozen Config.

Every upstream flag keeps its name, environment variable and default (kubelet-plugin.md §1.1);
every path is overridable, so the simulation can run many nodes on one machine, and every
default is the production path. Additions (ours): ``--nvml-backend``/``NVML_BACKEND``,
``--fake-nvml-profile``/``FAKE_NVML_PROFILE``, ``--fake-nvml-clique``/``FAKE_NVML_CLIQUE``,
``--boot-id-path``/``BOOT_ID_PATH``, ``--channel-strategy-map``/``CHANNEL_STRATEGY_MAP``,
``--nvidia-ctk-path``/``NVIDIA_CTK_PATH``, ``--cleanup-interval``/``CLEANUP_INTERVAL`` and
``--alt-proc-devices-path`` as the flag twin of upstream's ``ALT_PROC_DEVICES_PATH``, and
``--pod-ip``/``POD_IP`` (the DaemonSet's downward API): the gRPC health and HTTP endpoints listen
on the pod's own address when it is known, as every probe and scrape goes to the pod IP.

:func:`parse` is pure over ``argv`` and an environment mapping; a flag beats its environment
variable, which beats the default. Every error is a ConfigError naming the flag and variable.
Values are read with :mod:`computedomain.runtime.flags`' parsers (Go durations, numbers);
:func:`flag_set` describes the same settings as a ``FlagSet`` for generated documentation.
"""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

import computedomain
from computedomain.api import featuregates, names
from computedomain.api.errors import ConfigError
from computedomain.nvml import backends, fake
from computedomain.nvml.interface import BackendName
from computedomain.runtime import flags


@attrs.frozen
class Option:
    """One setting: its flags, environment variables (first is canonical), default and help."""

    dest: str
    flags: tuple[str, ...]
    env: tuple[str, ...]
    default: str | None
    help: str


OPTIONS: Final = (
    Option("node_name", ("--node-name",), ("NODE_NAME",), None, "this node's name (required)"),
    Option("namespace", ("--namespace",), ("NAMESPACE",), "default", "the driver namespace"),
    Option("http_endpoint", ("--http-endpoint",), ("HTTP_ENDPOINT",), "", "metrics host:port"),
    Option(
        "pod_ip",
        ("--pod-ip",),
        ("POD_IP",),
        "",
        "this pod's IP: health and metrics listen on it when HTTP_ENDPOINT names no host "
        "(empty: all addresses)",
    ),
    Option("metrics_path", ("--metrics-path",), ("METRICS_PATH",), "/metrics", "metrics path"),
    Option("cdi_root", ("--cdi-root",), ("CDI_ROOT",), "/etc/cdi", "CDI spec directory"),
    Option(
        "host_driver_root",
        ("--nvidia-driver-root", "--host-driver-root"),
        ("NVIDIA_DRIVER_ROOT", "HOST_DRIVER_ROOT"),
        "/",
        "driver root on the host",
    ),
    Option(
        "container_driver_root",
        ("--container-driver-root",),
        ("DRIVER_ROOT_CTR_PATH",),
        "/driver-root",
        "where the host driver root is mounted in this container",
    ),
    Option(
        "nvidia_cdi_hook_path",
        ("--nvidia-cdi-hook-path",),
        ("NVIDIA_CDI_HOOK_PATH",),
        "",
        "nvidia-cdi-hook for generated hooks (empty: copy the image's into the plugin dir)",
    ),
    Option(
        "registrar_dir",
        ("--kubelet-registrar-directory-path",),
        ("KUBELET_REGISTRAR_DIRECTORY_PATH",),
        names.KUBELET_REGISTRAR_DIR,
        "the kubelet's plugin registration directory",
    ),
    Option(
        "plugins_dir",
        ("--kubelet-plugins-directory-path",),
        ("KUBELET_PLUGINS_DIRECTORY_PATH",),
        names.KUBELET_PLUGINS_DIR,
        "the kubelet's plugins directory",
    ),
    Option(
        "healthcheck_port",
        ("--healthcheck-port",),
        ("HEALTHCHECK_PORT",),
        "-1",
        "gRPC health port (0: any free port, <0: off)",
    ),
    Option("kubeconfig", ("--kubeconfig",), ("KUBECONFIG",), "", "kubeconfig (empty: in-cluster)"),
    Option("kube_api_qps", ("--kube-api-qps",), ("KUBE_API_QPS",), "5", "API requests per second"),
    Option("kube_api_burst", ("--kube-api-burst",), ("KUBE_API_BURST",), "10", "API burst"),
    Option("feature_gates", ("--feature-gates",), ("FEATURE_GATES",), "", "Name=bool,..."),
    Option("verbosity", ("-v", "--v"), ("V", "LOG_VERBOSITY"), "0", "log verbosity (klog -v)"),
    Option(
        "proc_devices_path",
        ("--alt-proc-devices-path",),
        ("ALT_PROC_DEVICES_PATH",),
        "",
        "read this instead of /proc/devices (mock mode: capability files under the container "
        "driver root)",
    ),
    Option(
        "nvml_backend",
        ("--nvml-backend",),
        ("NVML_BACKEND",),
        BackendName.REAL.value,
        "NVML backend: real or fake",
    ),
    Option(
        "fake_nvml_profile",
        ("--fake-nvml-profile",),
        ("FAKE_NVML_PROFILE",),
        fake.Profile.GB200.value,
        "fake NVML profile: " + ", ".join(p.value for p in fake.Profile),
    ),
    Option(
        "fake_nvml_clique",
        ("--fake-nvml-clique",),
        ("FAKE_NVML_CLIQUE",),
        fake.DEFAULT_CLIQUE,
        "clique (<cluster UUID>.<clique id>) the gb200 profile reports",
    ),
    Option(
        "boot_id_path",
        ("--boot-id-path",),
        ("BOOT_ID_PATH",),
        names.DEFAULT_BOOT_ID_PATH,
        "boot ID file (a changed boot ID invalidates the checkpoint)",
    ),
    Option(
        "channel_strategy_map",
        ("--channel-strategy-map",),
        ("CHANNEL_STRATEGY_MAP",),
        "",
        "Mode=strategy,...: serve a claim's allocationMode (Single, All) with another "
        "registered channel strategy, e.g. Single=per-domain from a plugin; empty: each mode "
        "by the built-in of its name (ours)",
    ),
    Option(
        "nvidia_ctk_path",
        ("--nvidia-ctk-path",),
        ("NVIDIA_CTK_PATH",),
        "",
        "nvidia-ctk for the base CDI spec (empty: search PATH)",
    ),
    Option(
        "cleanup_interval",
        ("--cleanup-interval",),
        ("CLEANUP_INTERVAL",),
        "10m",
        "period of the stale-claim and orphan cleanups (Go duration)",
    ),
)


@attrs.frozen
class Config:
    node_name: str
    namespace: str
    http_endpoint: str
    metrics_path: str
    cdi_root: Path
    host_driver_root: Path
    container_driver_root: Path
    nvidia_cdi_hook_path: str
    registrar_dir: Path
    plugins_dir: Path
    healthcheck_port: int
    kubeconfig: str
    kube_api_qps: float
    kube_api_burst: int
    features: featuregates.Features
    verbosity: int
    proc_devices_path: Path | None  # ALT_PROC_DEVICES_PATH: also moves the capability files
    nvml_backend: BackendName
    fake_nvml_profile: fake.Profile
    fake_nvml_clique: str
    boot_id_path: Path
    channel_strategy_map: Mapping[str, str]
    nvidia_ctk_path: str
    cleanup_interval: float
    pod_ip: str = ""

    @property
    def health_address(self) -> str:
        """Where the gRPC health service listens: ``<pod IP>:<port>``, else all addresses."""
        return f"{_host(self.pod_ip) if self.pod_ip else '[::]'}:{self.healthcheck_port}"

    @property
    def http_address(self) -> str:
        """``HTTP_ENDPOINT`` with the pod IP as its host when it names none (``:8081``)."""
        host, sep, port = self.http_endpoint.rpartition(":")
        if sep and not host and self.pod_ip:
            return f"{_host(self.pod_ip)}:{port}"
        return self.http_endpoint

    @property
    def plugin_dir(self) -> Path:
        """``PD``: ``<plugins dir>/compute-domain.nvidia.com``."""
        return self.plugins_dir / names.DRIVER_NAME

    @property
    def registration_socket(self) -> Path:
        return self.registrar_dir / names.REGISTRATION_SOCKET

    @property
    def dra_socket(self) -> Path:
        return self.plugin_dir / names.DRA_SOCKET

    @property
    def domains_dir(self) -> Path:
        return self.plugin_dir / names.DOMAINS_SUBDIR

    @property
    def lock_path(self) -> Path:
        return self.plugin_dir / names.PREPARE_LOCK_FILE

    @property
    def proc_devices(self) -> Path:
        return self.proc_devices_path or Path(names.DEFAULT_PROC_DEVICES_PATH)

    @property
    def fabric_imex_mgmt(self) -> Path:
        """The capability file: under the container driver root in mock mode (upstream's rule)."""
        if self.proc_devices_path is None:
            return Path(names.FABRIC_IMEX_MGMT_PATH)
        return self.container_driver_root / names.FABRIC_IMEX_MGMT_PATH.lstrip("/")


def _host(ip: str) -> str:
    """An address as the host part of ``host:port`` (IPv6 in brackets). Pure."""
    return f"[{ip}]" if ":" in ip else ip


def _label(option: Option) -> str:
    return f"{option.flags[-1] if option.flags[0] == '-v' else option.flags[0]}/{option.env[0]}"


def parse_duration(field: str, text: str) -> float:
    """A Go duration (``10m``, ``1h30m``, ``500ms``) or plain seconds, in seconds."""
    try:
        return flags.duration(text)
    except ValueError as exc:
        raise ConfigError(field, str(exc)) from None


def parse_strategy_map(field: str, text: str) -> dict[str, str]:
    """``Mode=strategy,...`` -> mapping. Pure; ConfigError on bad items."""
    result: dict[str, str] = {}
    for raw_item in text.split(","):
        item = raw_item.strip()
        if not item:
            continue
        mode, sep, strategy = item.partition("=")
        if not sep or not mode.strip() or not strategy.strip():
            raise ConfigError(field, f"{item!r} is not Mode=strategy")
        result[mode.strip()] = strategy.strip()
    return result


def _number(field: str, text: str, kind: type[int] | type[float]) -> Any:
    try:
        return flags.integer(text) if kind is int else flags.number(text)
    except ValueError as exc:
        raise ConfigError(field, str(exc)) from None


def flag_set() -> flags.FlagSet:
    """The settings as a :class:`~computedomain.runtime.flags.FlagSet` (canonical flag and
    variable of each), for the generated configuration reference. :func:`parse` is what the
    program uses: it also accepts upstream's aliases and reports errors as ``Error: ...``."""
    return flags.FlagSet(
        "cd-kubelet-plugin",
        [
            flags.Option(
                flag=next((f for f in o.flags if f.startswith("--")), o.flags[0]),
                env=o.env[0],
                default=o.default,
                required=o.default is None,
                help=o.help,
            )
            for o in OPTIONS
        ],
    )


def parse(argv: Sequence[str], environ: Mapping[str, str]) -> Config:
    """Build the Config from command-line arguments and the environment. Pure; ConfigError."""
    parser = argparse.ArgumentParser(prog="cd-kubelet-plugin", add_help=True, exit_on_error=False)
    parser.add_argument("--version", action="version", version=computedomain.__version__)
    for option in OPTIONS:
        env_names = ", ".join(option.env)
        parser.add_argument(
            *option.flags, dest=option.dest, default=None, help=f"{option.help} [${env_names}]"
        )
    try:
        args, extra = parser.parse_known_args(list(argv))
    except argparse.ArgumentError as exc:
        raise ConfigError("arguments", str(exc)) from None
    if extra:
        raise ConfigError("arguments", f"unexpected arguments: {' '.join(extra)}")
    raw: dict[str, str] = {}
    for option in OPTIONS:
        value = getattr(args, option.dest)
        if value is None:
            value = next((environ[e] for e in option.env if environ.get(e) is not None), None)
        if value is None:
            if option.default is None:
                raise ConfigError(_label(option), "is required")
            value = option.default
        raw[option.dest] = value
    label = {o.dest: _label(o) for o in OPTIONS}
    if not raw["node_name"]:
        raise ConfigError(label["node_name"], "is required")
    features = featuregates.parse(raw["feature_gates"])
    verbosity = _number(label["verbosity"], raw["verbosity"], int)
    if not 0 <= verbosity <= 10:
        raise ConfigError(label["verbosity"], f"{verbosity} is not between 0 and 10")
    clique = raw["fake_nvml_clique"]
    fake.parse_clique(clique, setting=label["fake_nvml_clique"])
    return Config(
        node_name=raw["node_name"],
        namespace=raw["namespace"],
        http_endpoint=raw["http_endpoint"],
        metrics_path=raw["metrics_path"],
        cdi_root=Path(raw["cdi_root"]),
        host_driver_root=Path(raw["host_driver_root"]),
        container_driver_root=Path(raw["container_driver_root"]),
        nvidia_cdi_hook_path=raw["nvidia_cdi_hook_path"],
        registrar_dir=Path(raw["registrar_dir"]),
        plugins_dir=Path(raw["plugins_dir"]),
        healthcheck_port=_number(label["healthcheck_port"], raw["healthcheck_port"], int),
        kubeconfig=raw["kubeconfig"],
        kube_api_qps=_number(label["kube_api_qps"], raw["kube_api_qps"], float),
        kube_api_burst=_number(label["kube_api_burst"], raw["kube_api_burst"], int),
        features=features,
        verbosity=verbosity,
        proc_devices_path=Path(raw["proc_devices_path"]) if raw["proc_devices_path"] else None,
        nvml_backend=backends.parse_backend(raw["nvml_backend"], setting=label["nvml_backend"]),
        fake_nvml_profile=fake.parse_profile(
            raw["fake_nvml_profile"], setting=label["fake_nvml_profile"]
        ),
        fake_nvml_clique=clique,
        boot_id_path=Path(raw["boot_id_path"]),
        channel_strategy_map=parse_strategy_map(
            label["channel_strategy_map"], raw["channel_strategy_map"]
        ),
        nvidia_ctk_path=raw["nvidia_ctk_path"],
        cleanup_interval=parse_duration(label["cleanup_interval"], raw["cleanup_interval"]),
        pod_ip=_pod_ip(label["pod_ip"], raw["pod_ip"]),
    )


def _pod_ip(field: str, text: str) -> str:
    """An IPv4 or IPv6 address, or empty. Pure; ConfigError otherwise."""
    text = text.strip()
    if not text:
        return ""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ConfigError(field, f"{text!r} is not an IP address") from None
