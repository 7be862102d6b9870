"""cd-kubelet-plugin's configuration: flags, their environment twins, and the frozen Config.

Every upstream flag keeps its name, environment variable and default (docs/configuration.md);
every path is overridable, so the simulation can run many nodes on one machine, and every
default is the production path. Additions (ours): ``--nvml-backend``/``NVML_BACKEND``,
``--fake-nvml-profile``/``FAKE_NVML_PROFILE``, ``--fake-nvml-clique``/``FAKE_NVML_CLIQUE``,
``--fake-nvml-profile-file``/``FAKE_NVML_PROFILE_FILE``,
``--boot-id-path``/``BOOT_ID_PATH``, ``--channel-strategy-map``/``CHANNEL_STRATEGY_MAP``,
``--nvidia-ctk-path``/``NVIDIA_CTK_PATH``, ``--cleanup-interval``/``CLEANUP_INTERVAL``,
``--clique-id-refresh-interval``/``CLIQUE_ID_REFRESH_INTERVAL`` (upstream re-reads every 10
minutes, fixed) and
``--alt-proc-devices-path`` as the flag twin of upstream's ``ALT_PROC_DEVICES_PATH``, and
``--pod-ip``/``POD_IP`` (the DaemonSet's downward API): the gRPC health and HTTP endpoints listen
on the pod's own address when it is known, as every probe and scrape goes to the pod IP.

:data:`OPTIONS` are read by :mod:`computedomain.runtime.flags` (a flag beats its environment
variable, which beats the default); :func:`resolve` checks them and builds the frozen
:class:`Config`. :func:`parse` is pure over ``argv`` and an environment mapping and raises
ConfigError naming the flag and variable; :func:`load`, for ``main``, exits with status 2.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import attrs

import computedomain
from computedomain.api import featuregates, imex, names
from computedomain.api.errors import ConfigError
from computedomain.nvml import backends, fake
from computedomain.nvml.interface import BackendName
from computedomain.runtime import flags
from computedomain.runtime.flags import Option, Values

PROG: Final = "cd-kubelet-plugin"
_DEFAULT_SOCKET: Final = imex.DEFAULT_HOST_SOCKET_PATH

OPTIONS: Final = (
    Option("--node-name", "NODE_NAME", required=True, help="this node's name"),
    Option("--namespace", "NAMESPACE", default="default", help="the driver namespace"),
    Option("--http-endpoint", "HTTP_ENDPOINT", default="", help="metrics host:port"),
    Option(
        "--pod-ip",
        "POD_IP",
        default="",
        help="this pod's IP: health and metrics listen on it when HTTP_ENDPOINT names no host "
        "(empty: all addresses)",
    ),
    Option("--metrics-path", "METRICS_PATH", default="/metrics", help="metrics path"),
    Option("--cdi-root", "CDI_ROOT", default="/etc/cdi", help="CDI spec directory"),
    Option(
        "--nvidia-driver-root",
        "NVIDIA_DRIVER_ROOT",
        default="/",
        aliases=("--host-driver-root",),
        env_aliases=("HOST_DRIVER_ROOT",),
        dest="host_driver_root",
        help="driver root on the host",
    ),
    Option(
        "--container-driver-root",
        "DRIVER_ROOT_CTR_PATH",
        default="/driver-root",
        help="where the host driver root is mounted in this container",
    ),
    Option(
        "--nvidia-cdi-hook-path",
        "NVIDIA_CDI_HOOK_PATH",
        default="",
        help="nvidia-cdi-hook for generated hooks (empty: copy the image's into the plugin dir)",
    ),
    Option(
        "--kubelet-registrar-directory-path",
        "KUBELET_REGISTRAR_DIRECTORY_PATH",
        default=names.KUBELET_REGISTRAR_DIR,
        dest="registrar_dir",
        help="the kubelet's plugin registration directory",
    ),
    Option(
        "--kubelet-plugins-directory-path",
        "KUBELET_PLUGINS_DIRECTORY_PATH",
        default=names.KUBELET_PLUGINS_DIR,
        dest="plugins_dir",
        help="the kubelet's plugins directory",
    ),
    Option(
        "--healthcheck-port",
        "HEALTHCHECK_PORT",
        flags.integer,
        default=-1,
        help="gRPC health port (0: any free port, <0: off)",
    ),
    Option("--kubeconfig", "KUBECONFIG", default="", help="kubeconfig (empty: in-cluster)"),
    Option(
        "--kube-api-qps", "KUBE_API_QPS", flags.number, default=5.0, help="API requests per second"
    ),
    Option("--kube-api-burst", "KUBE_API_BURST", flags.integer, default=10, help="API burst"),
    Option("--feature-gates", "FEATURE_GATES", default="", help="Name=bool,..."),
    Option(
        "--imex-mode",
        imex.ENV_MODE,
        default=str(imex.DEFAULT_MODE),
        help="driverManaged or hostManaged (the host runs nvidia-imex; only channel-0 is "
        "published; needs the HostManagedIMEXDaemon gate)",
    ),
    Option(
        "--imex-isolation",
        imex.ENV_ISOLATION,
        default=str(imex.DEFAULT_ISOLATION),
        help="domain (empty: domain); channel is reserved and refused",
    ),
    Option(
        "--imex-host-socket-path",
        imex.ENV_HOST_SOCKET_PATH,
        default=imex.DEFAULT_HOST_SOCKET_PATH,
        help="the host nvidia-imex control socket, inside the driver root (hostManaged only)",
    ),
    Option(
        "--v",
        "V",
        flags.integer,
        default=0,
        aliases=("-v",),
        env_aliases=("LOG_VERBOSITY",),
        dest="verbosity",
        help="log verbosity (klog -v)",
    ),
    Option(
        "--alt-proc-devices-path",
        "ALT_PROC_DEVICES_PATH",
        default="",
        dest="proc_devices_path",
        help="read this instead of /proc/devices (mock mode: capability files under the container "
        "driver root)",
    ),
    Option(
        "--nvml-backend",
        "NVML_BACKEND",
        default=BackendName.REAL.value,
        help="NVML backend: real or fake",
    ),
    Option(
        "--fake-nvml-profile",
        "FAKE_NVML_PROFILE",
        default=fake.Profile.GB200.value,
        help="fake NVML profile: " + ", ".join(p.value for p in fake.Profile),
    ),
    Option(
        "--fake-nvml-clique",
        "FAKE_NVML_CLIQUE",
        default=fake.DEFAULT_CLIQUE,
        help="clique (<cluster UUID>.<clique id>) the gb200 profile reports",
    ),
    Option(
        "--fake-nvml-profile-file",
        "FAKE_NVML_PROFILE_FILE",
        default="",
        help="fake NVML: serve this profile document, read afresh at every query (replace it "
        "to change the node's hardware at runtime); empty: the named profile",
    ),
    Option(
        "--boot-id-path",
        "BOOT_ID_PATH",
        default=names.DEFAULT_BOOT_ID_PATH,
        help="boot ID file (a changed boot ID invalidates the checkpoint)",
    ),
    Option(
        "--channel-strategy-map",
        "CHANNEL_STRATEGY_MAP",
        default="",
        help="Mode=strategy,...: serve a claim's allocationMode (Single, All) with another "
        "registered channel strategy, e.g. Single=per-domain from a plugin; empty: each mode "
        "by the built-in of its name (ours)",
    ),
    Option(
        "--nvidia-ctk-path",
        "NVIDIA_CTK_PATH",
        default="",
        help="nvidia-ctk for the base CDI spec (empty: search PATH)",
    ),
    Option(
        "--cleanup-interval",
        "CLEANUP_INTERVAL",
        flags.duration,
        default=600.0,
        help="period of the stale-claim and orphan cleanups (Go duration)",
    ),
    Option(
        "--gpu-clique-label-enabled",
        "GPU_CLIQUE_LABEL_ENABLED",
        flags.boolean,
        default=False,
        help="label this node nvidia.com/gpu.clique=<clique ID> while the plugin runs (needs "
        "the nodes patch permission)",
    ),
    Option(
        "--clique-id-refresh-interval",
        "CLIQUE_ID_REFRESH_INTERVAL",
        flags.duration,
        default=600.0,
        help="period of re-reading the node's clique ID from NVML (Go duration)",
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
    gpu_clique_label_enabled: bool = False
    clique_id_refresh_interval: float = 600.0
    fake_nvml_profile_file: Path | None = None
    imex_host_socket_path: str = _DEFAULT_SOCKET
    imex: imex.Settings = attrs.field(factory=imex.Settings)  # (the field hides the module here)

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


def resolve(values: Values) -> Config:
    """Check the parsed settings and build the Config. Pure; ConfigError naming the setting."""
    features = featuregates.parse(values.feature_gates)
    imex_settings = imex.resolve(values.imex_mode, values.imex_isolation, features)
    socket_path = _socket_path("--imex-host-socket-path/IMEX_HOST_SOCKET_PATH", values)
    if not 0 <= values.verbosity <= 10:
        raise ConfigError("--v/V", f"{values.verbosity} is not between 0 and 10")
    fake.parse_clique(values.fake_nvml_clique, setting="--fake-nvml-clique/FAKE_NVML_CLIQUE")
    if values.clique_id_refresh_interval <= 0:
        raise ConfigError(
            "--clique-id-refresh-interval/CLIQUE_ID_REFRESH_INTERVAL",
            f"must be positive (got {values.clique_id_refresh_interval:g}s)",
        )
    return Config(
        node_name=values.node_name,
        namespace=values.namespace,
        http_endpoint=values.http_endpoint,
        metrics_path=values.metrics_path,
        cdi_root=Path(values.cdi_root),
        host_driver_root=Path(values.host_driver_root),
        container_driver_root=Path(values.container_driver_root),
        nvidia_cdi_hook_path=values.nvidia_cdi_hook_path,
        registrar_dir=Path(values.registrar_dir),
        plugins_dir=Path(values.plugins_dir),
        healthcheck_port=values.healthcheck_port,
        kubeconfig=values.kubeconfig,
        kube_api_qps=values.kube_api_qps,
        kube_api_burst=values.kube_api_burst,
        features=features,
        verbosity=values.verbosity,
        proc_devices_path=Path(values.proc_devices_path) if values.proc_devices_path else None,
        nvml_backend=backends.parse_backend(
            values.nvml_backend, setting="--nvml-backend/NVML_BACKEND"
        ),
        fake_nvml_profile=fake.parse_profile(
            values.fake_nvml_profile, setting="--fake-nvml-profile/FAKE_NVML_PROFILE"
        ),
        fake_nvml_clique=values.fake_nvml_clique,
        boot_id_path=Path(values.boot_id_path),
        channel_strategy_map=parse_strategy_map(
            "--channel-strategy-map/CHANNEL_STRATEGY_MAP", values.channel_strategy_map
        ),
        nvidia_ctk_path=values.nvidia_ctk_path,
        cleanup_interval=values.cleanup_interval,
        pod_ip=_pod_ip("--pod-ip/POD_IP", values.pod_ip),
        gpu_clique_label_enabled=values.gpu_clique_label_enabled,
        clique_id_refresh_interval=values.clique_id_refresh_interval,
        fake_nvml_profile_file=(
            Path(values.fake_nvml_profile_file) if values.fake_nvml_profile_file else None
        ),
        imex=imex_settings,
        imex_host_socket_path=socket_path,
    )


def flag_set() -> flags.FlagSet:
    """The plugin's settings as one :class:`~computedomain.runtime.flags.FlagSet`."""
    return flags.FlagSet(
        PROG,
        OPTIONS,
        description="The ComputeDomain kubelet plugin.",
        version=computedomain.__version__,
    )


def parse(argv: Sequence[str], environ: Mapping[str, str]) -> Config:
    """Build the Config from command-line arguments and the environment. Pure; ConfigError."""
    return resolve(flag_set().parse(argv, environ))


def load(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """:func:`parse` for ``main``: a bad setting exits with status 2 and a message."""
    return flag_set().load(resolve, argv, environ)


def _pod_ip(field: str, text: str) -> str:
    """An IPv4 or IPv6 address, or empty. Pure; ConfigError otherwise."""
    text = text.strip()
    if not text:
        return ""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ConfigError(field, f"{text!r} is not an IP address") from None


def _socket_path(field: str, values: Values) -> str:
    """The host socket path: absolute, normalised, no NUL. Pure; ConfigError otherwise."""
    text = str(values.imex_host_socket_path).strip()
    if not text.startswith("/") or "\0" in text or os.path.normpath(text) in ("/", "//"):
        raise ConfigError(field, f"{text!r} is not an absolute path of a socket")
    return os.path.normpath(text)
