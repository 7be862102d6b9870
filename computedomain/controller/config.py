"""cd-controller's settings: flags with their environment twins, and the config they resolve to.

Upstream's names and defaults (controller.md §1.1) come first in :data:`OPTIONS`; ours follow,
each documented in its help text. Every flag has an environment twin
(:mod:`computedomain.runtime.flags`), and the configuration reference is generated from
:data:`OPTIONS`. :func:`resolve` checks the parsed values and builds one frozen
:class:`ProgramConfig`; everything below ``main`` receives its :class:`ControllerConfig` and
never reads the environment. The value parsers here are pure and raise
:class:`~computedomain.api.errors.ConfigError` naming the setting, so a bad value stops the
program at start (status 2) with a message a user can act on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

import computedomain
from computedomain.api import featuregates, names, validation
from computedomain.api.errors import ConfigError
from computedomain.runtime import flags
from computedomain.runtime.flags import Option, Values

DEFAULT_DAEMON_COMMAND: Final = "cd-imex-daemon"
DEFAULT_STATUS_COALESCE_WINDOW: Final = 0.25
DEFAULT_STATUS_COALESCE_MAX_WINDOW: Final = 2.0  # upstream polls status every 2 s
DEFAULT_CLEANUP_INTERVAL: Final = 600.0  # upstream's orphan-cleanup period (10 min)
DEFAULT_RESYNC_PERIOD: Final = 600.0  # upstream's informer resync (10 min)

# The daemon's policy selectors (its --index-policy / --dns-name-policy), forwarded when set.
ENV_INDEX_POLICY: Final = "INDEX_POLICY"
ENV_DNS_NAME_POLICY: Final = "DNS_NAME_POLICY"
# Variables the rendered daemon container already has (from the DaemonSet or CDI): the policy
# environment may not replace them.
RESERVED_DAEMON_ENV: Final = frozenset(
    {
        names.ENV_LOG_VERBOSITY,
        names.ENV_MAX_NODES_PER_IMEX_DOMAIN,
        names.ENV_NODE_NAME,
        names.ENV_POD_IP,
        names.ENV_POD_UID,
        names.ENV_POD_NAME,
        names.ENV_POD_NAMESPACE,
        names.ENV_NVIDIA_VISIBLE_DEVICES,
        names.ENV_FEATURE_GATES,
        names.ENV_CLIQUE_ID,
        names.ENV_COMPUTE_DOMAIN_UUID,
        names.ENV_COMPUTE_DOMAIN_NAME,
        names.ENV_COMPUTE_DOMAIN_NAMESPACE,
        ENV_INDEX_POLICY,
        ENV_DNS_NAME_POLICY,
    }
)

# Kubernetes resource quantities: a signed decimal with an optional suffix (SI, binary, exponent).
_QUANTITY = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?")
_RESOURCE_NAME = re.compile(r"([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_RESOURCE_SECTIONS: Final = frozenset({"requests", "limits"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class DaemonSettings:
    """Everything the renderers need beyond the ComputeDomain itself (fixed at DS creation)."""

    namespace: str
    image: str
    log_verbosity: int
    max_nodes_per_imex_domain: int = names.DEFAULT_MAX_NODES_PER_IMEX_DOMAIN
    feature_gates: str = attrs.field(factory=lambda: featuregates.parse("").render())
    image_pull_secrets: tuple[str, ...] = ()
    priority_class_name: str = ""
    # {"requests": {"cpu": "100m"}, "limits": {...}}; empty: no requests or limits (upstream).
    resources: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    command: str = DEFAULT_DAEMON_COMMAND
    # The daemons' policies by name (empty: not rendered, the daemon's default applies) and the
    # policies' own settings, as (name, value) environment pairs in the operator's order.
    index_policy: str = ""
    dns_name_policy: str = ""
    policy_env: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class ControllerConfig:
    """What a :class:`~computedomain.controller.controller.Controller` needs to run."""

    daemon: DaemonSettings
    features: featuregates.Features = attrs.field(factory=lambda: featuregates.parse(""))
    additional_namespaces: tuple[str, ...] = ()
    workers: int = 1
    status_coalesce_window: float = DEFAULT_STATUS_COALESCE_WINDOW
    status_coalesce_max_window: float = DEFAULT_STATUS_COALESCE_MAX_WINDOW
    cleanup_interval: float = DEFAULT_CLEANUP_INTERVAL
    resync_period: float = DEFAULT_RESYNC_PERIOD

    @property
    def driver_namespace(self) -> str:
        return self.daemon.namespace

    @property
    def managed_namespaces(self) -> tuple[str, ...]:
        """The driver namespace first, then each additional one once (controller.md §1.5)."""
        return unique((self.daemon.namespace, *self.additional_namespaces))


def unique(items: tuple[str, ...]) -> tuple[str, ...]:
    """``items`` without repeats, first occurrence kept. Pure."""
    return tuple(dict.fromkeys(items))


def parse_pull_secrets(text: str) -> tuple[str, ...]:
    """``CD_DAEMON_IMAGE_PULL_SECRET_NAMES``: commas and whitespace both separate. Pure.

    Upstream trims the value, turns commas into spaces and splits on whitespace; each name must
    be a valid Secret name.
    """
    found = text.replace(",", " ").split()
    for name in found:
        validation.dns1123_subdomain("CD_DAEMON_IMAGE_PULL_SECRET_NAMES", name)
    return unique(tuple(found))


def parse_namespaces(text: str) -> tuple[str, ...]:
    """``ADDITIONAL_NAMESPACES``: comma-separated, items trimmed, empty items skipped. Pure."""
    found = tuple(item.strip() for item in text.split(",") if item.strip())
    for name in found:
        validation.dns1123_label("ADDITIONAL_NAMESPACES", name)
    return unique(found)


def parse_resources(text: str, field: str = "CD_DAEMON_RESOURCES") -> dict[str, dict[str, str]]:
    """Daemon container resources from ``cpu=100m,memory=64Mi`` or JSON. Pure.

    The ``key=value`` form and a flat JSON object give requests; a JSON object with ``requests``
    and/or ``limits`` gives both. Empty text gives no resources (upstream's DaemonSet has none).
    Raises ConfigError naming ``field`` for bad syntax, names or quantities.
    """
    text = text.strip()
    if not text:
        return {}
    sections: dict[str, object]
    if text.startswith(("{", "[")):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(field, f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(field, "must be a JSON object")
        if loaded and set(loaded) <= _RESOURCE_SECTIONS:
            sections = dict(loaded)
        else:
            sections = {"requests": loaded}
    else:
        pairs: dict[str, str] = {}
        for item in text.split(","):
            if not item.strip():
                continue
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(field, f"{item.strip()!r} is not name=quantity")
            pairs[key.strip()] = value.strip()
        sections = {"requests": pairs}
    result: dict[str, dict[str, str]] = {}
    for section, values in sections.items():
        if not isinstance(values, dict):
            raise ConfigError(field, f"{section} must be an object of name: quantity")
        checked: dict[str, str] = {}
        for key, value in values.items():
            quantity = str(value).strip()
            if not _RESOURCE_NAME.fullmatch(str(key)):
                raise ConfigError(field, f"{key!r} is not a resource name")
            if not _QUANTITY.fullmatch(quantity):
                raise ConfigError(field, f"{key}: {quantity!r} is not a resource quantity")
            checked[str(key)] = quantity
        if checked:
            result[section] = checked
    return result


def parse_policy_name(field: str, text: str) -> str:
    """A policy name to forward (``INDEX_POLICY``, ``DNS_NAME_POLICY``); empty: none. Pure.

    Which names exist is known where the plugins are loaded (the daemon refuses an unknown one
    at start, listing the valid ones); here only the shape is checked: no whitespace or control
    characters, which no policy name has and which would not survive the environment.
    """
    name = text.strip()
    if any(ch.isspace() or not ch.isprintable() for ch in name):
        raise ConfigError(field, f"{name!r} is not a policy name (no spaces or control characters)")
    return name


def parse_policy_env(text: str, field: str = "CD_DAEMON_POLICY_ENV") -> tuple[tuple[str, str], ...]:
    """The daemons' policy settings from ``NAME=value,...`` or a JSON object of strings. Pure.

    Items are trimmed and empty ones skipped; the JSON form allows commas in values. A name must
    be an environment variable name and must not be one the DaemonSet or CDI already sets
    (:data:`RESERVED_DAEMON_ENV`, the policy selectors included: they have settings of their
    own), nor appear twice. Raises ConfigError naming ``field``.
    """
    text = text.strip()
    pairs: list[tuple[str, str]] = []
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(field, f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
        if not isinstance(loaded, dict) or not all(isinstance(v, str) for v in loaded.values()):
            raise ConfigError(field, "must be a JSON object of strings")
        pairs = [(str(k), v) for k, v in loaded.items()]
    elif text:
        for item in text.split(","):
            if not item.strip():
                continue
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(field, f"{item.strip()!r} is not NAME=value")
            pairs.append((key.strip(), value.strip()))
    seen: set[str] = set()
    for key, _value in pairs:
        if not _ENV_NAME.fullmatch(key):
            raise ConfigError(field, f"{key!r} is not an environment variable name")
        if key in RESERVED_DAEMON_ENV:
            raise ConfigError(field, f"{key} is set by the DaemonSet itself")
        if key in seen:
            raise ConfigError(field, f"{key} is given twice")
        seen.add(key)
    return tuple(pairs)


def check_positive(field: str, value: float) -> None:
    """Raise ConfigError unless ``value`` > 0."""
    if not value > 0:
        raise ConfigError(field, f"must be greater than 0, got {value}")


def check_non_negative(field: str, value: float) -> None:
    """Raise ConfigError if ``value`` < 0."""
    if value < 0:
        raise ConfigError(field, f"must not be negative, got {value}")


PROG: Final = "cd-controller"

OPTIONS: Final = (
    # -- upstream's (controller.md §1.1) -----------------------------------------------------
    Option("--pod-name", "POD_NAME", required=True, help="this pod's name (leader identity)"),
    Option("--namespace", "NAMESPACE", default="default", help="the driver namespace"),
    Option("--image-name", "IMAGE_NAME", required=True, help="image of the daemon DaemonSet"),
    Option(
        "--cd-daemon-image-pull-secret-names",
        "CD_DAEMON_IMAGE_PULL_SECRET_NAMES",
        default="",
        help="image pull secrets of daemon pods (comma or space separated)",
    ),
    Option(
        "--log-verbosity-cd-daemon",
        "LOG_VERBOSITY_CD_DAEMON",
        flags.integer,
        required=True,
        help="log verbosity of the daemons (their LOG_VERBOSITY)",
    ),
    Option(
        "--max-nodes-per-imex-domain",
        "MAX_NODES_PER_IMEX_DOMAIN",
        flags.integer,
        default=18,
        help="nodes per IMEX domain, passed to the daemons",
    ),
    Option("--http-endpoint", "HTTP_ENDPOINT", default="", help="listen address (:8080); off"),
    Option("--metrics-path", "METRICS_PATH", default="/metrics", help="empty: no metrics"),
    Option("--pprof-path", "PPROF_PATH", default="", help="accepted for compatibility; unused"),
    Option(
        "--additional-namespaces",
        "ADDITIONAL_NAMESPACES",
        default="",
        help="more namespaces whose daemon DaemonSets are managed (earlier installs)",
    ),
    Option("--kubeconfig", "KUBECONFIG", default="", help="empty: in-cluster configuration"),
    Option("--kube-api-qps", "KUBE_API_QPS", flags.number, default=5.0, help="client QPS"),
    Option("--kube-api-burst", "KUBE_API_BURST", flags.integer, default=10, help="client burst"),
    Option("--leader-election-enabled", "LEADER_ELECTION_ENABLED", flags.boolean, default=False),
    Option(
        "--leader-election-lease-lock-namespace",
        "LEADER_ELECTION_LEASE_LOCK_NAMESPACE",
        default="default",
    ),
    Option(
        "--leader-election-lease-lock-name",
        "LEADER_ELECTION_LEASE_LOCK_NAME",
        default="nvidia-compute-domain-controller",
    ),
    Option(
        "--leader-election-lease-duration",
        "LEADER_ELECTION_LEASE_DURATION",
        flags.duration,
        default=15.0,
    ),
    Option(
        "--leader-election-renew-deadline",
        "LEADER_ELECTION_RENEW_DEADLINE",
        flags.duration,
        default=10.0,
    ),
    Option(
        "--leader-election-retry-period",
        "LEADER_ELECTION_RETRY_PERIOD",
        flags.duration,
        default=2.0,
    ),
    Option("--feature-gates", "FEATURE_GATES", default="", help="Name=bool,... (upstream's)"),
    Option("--v", "V", flags.integer, default=0, aliases=("-v",), help="log verbosity"),
    # -- ours --------------------------------------------------------------------------------
    Option(
        "--workers",
        "WORKERS",
        flags.integer,
        default=4,
        help="domains reconciled at once (ours; upstream runs one worker)",
    ),
    Option(
        "--status-coalesce-window",
        "STATUS_COALESCE_WINDOW",
        flags.duration,
        default=0.25,
        help="at most one status write per domain per window (ours)",
    ),
    Option(
        "--status-coalesce-max-window",
        "STATUS_COALESCE_MAX_WINDOW",
        flags.duration,
        default=2.0,
        help="widest window while a domain's status keeps changing (ours; upstream polls every 2s)",
    ),
    Option(
        "--cd-daemon-priority-class-name",
        "CD_DAEMON_PRIORITY_CLASS_NAME",
        default="",
        help="priorityClassName of daemon pods (ours; upstream sets none)",
    ),
    Option(
        "--cd-daemon-resources",
        "CD_DAEMON_RESOURCES",
        default="",
        help='daemon container resources: "cpu=100m,memory=64Mi" (requests) or JSON '
        '{"requests": {...}, "limits": {...}} (ours; upstream sets none)',
    ),
    Option(
        "--daemon-command",
        "DAEMON_COMMAND",
        default=DEFAULT_DAEMON_COMMAND,
        help="the daemon binary in the image, for its run and check commands (ours)",
    ),
    Option(
        "--index-policy",
        ENV_INDEX_POLICY,
        default="",
        help="the daemons' index policy, by name (their INDEX_POLICY; e.g. stable-hash from a "
        "plugin); empty: not set, the daemon's lowest-free (ours)",
    ),
    Option(
        "--dns-name-policy",
        ENV_DNS_NAME_POLICY,
        default="",
        help="the daemons' DNS-name policy, by name (their DNS_NAME_POLICY; e.g. suffix from a "
        "plugin); empty: not set, the daemon's upstream (ours)",
    ),
    Option(
        "--cd-daemon-policy-env",
        "CD_DAEMON_POLICY_ENV",
        default="",
        help="settings of the daemons' policies, added to their environment: NAME=value,... or "
        "a JSON object (e.g. CD_DNS_SUFFIX=imex.example.com for suffix) (ours)",
    ),
    Option(
        "--cleanup-interval",
        "CLEANUP_INTERVAL",
        flags.duration,
        default=DEFAULT_CLEANUP_INTERVAL,
        help="orphan cleanup period (upstream: 10m)",
    ),
)


@attrs.frozen
class LeaderElection:
    lease_name: str
    namespace: str
    lease_duration: float
    renew_deadline: float
    retry_period: float


@attrs.frozen
class ProgramConfig:
    """Everything ``main`` wires: the controller's config plus process-level settings."""

    controller: ControllerConfig
    pod_name: str
    kubeconfig: str
    qps: float
    burst: int
    http_endpoint: str
    metrics_path: str
    verbosity: int
    leader_election: LeaderElection | None
    pprof_path: str = ""


def resolve(values: Values) -> ProgramConfig:
    """Check every setting and build the config. Pure; raises ConfigError naming the setting."""
    features = featuregates.parse(values.feature_gates)
    namespace = validation.dns1123_label("NAMESPACE", values.namespace)
    if not values.image_name.strip():
        raise ConfigError("IMAGE_NAME", "must not be empty")
    if not 0 <= values.log_verbosity_cd_daemon <= 10:
        raise ConfigError("LOG_VERBOSITY_CD_DAEMON", "must be between 0 and 10")
    if not 0 <= values.v <= 10:
        raise ConfigError("-v", "must be between 0 and 10")
    check_positive("MAX_NODES_PER_IMEX_DOMAIN", values.max_nodes_per_imex_domain)
    check_positive("KUBE_API_QPS", values.kube_api_qps)
    check_positive("KUBE_API_BURST", values.kube_api_burst)
    check_positive("WORKERS", values.workers)
    check_non_negative("STATUS_COALESCE_WINDOW", values.status_coalesce_window)
    if values.status_coalesce_max_window < values.status_coalesce_window:
        raise ConfigError(
            "STATUS_COALESCE_MAX_WINDOW",
            f"must not be below STATUS_COALESCE_WINDOW ({values.status_coalesce_window}s),"
            f" got {values.status_coalesce_max_window}s",
        )
    check_positive("CLEANUP_INTERVAL", values.cleanup_interval)
    priority = values.cd_daemon_priority_class_name.strip()
    if priority:
        validation.dns1123_subdomain("CD_DAEMON_PRIORITY_CLASS_NAME", priority)
    if not values.daemon_command.strip():
        raise ConfigError("DAEMON_COMMAND", "must not be empty")
    daemon = DaemonSettings(
        namespace=namespace,
        image=values.image_name.strip(),
        log_verbosity=values.log_verbosity_cd_daemon,
        max_nodes_per_imex_domain=values.max_nodes_per_imex_domain,
        feature_gates=features.render(),
        image_pull_secrets=parse_pull_secrets(values.cd_daemon_image_pull_secret_names),
        priority_class_name=priority,
        resources=parse_resources(values.cd_daemon_resources),
        command=values.daemon_command.strip(),
        index_policy=parse_policy_name(ENV_INDEX_POLICY, values.index_policy),
        dns_name_policy=parse_policy_name(ENV_DNS_NAME_POLICY, values.dns_name_policy),
        policy_env=parse_policy_env(values.cd_daemon_policy_env),
    )
    controller = ControllerConfig(
        daemon=daemon,
        features=features,
        additional_namespaces=parse_namespaces(values.additional_namespaces),
        workers=values.workers,
        status_coalesce_window=values.status_coalesce_window,
        status_coalesce_max_window=values.status_coalesce_max_window,
        cleanup_interval=values.cleanup_interval,
    )
    election = None
    if values.leader_election_enabled:
        election = LeaderElection(
            lease_name=validation.dns1123_subdomain(
                "LEADER_ELECTION_LEASE_LOCK_NAME", values.leader_election_lease_lock_name
            ),
            namespace=validation.dns1123_label(
                "LEADER_ELECTION_LEASE_LOCK_NAMESPACE",
                values.leader_election_lease_lock_namespace,
            ),
            lease_duration=values.leader_election_lease_duration,
            renew_deadline=values.leader_election_renew_deadline,
            retry_period=values.leader_election_retry_period,
        )
        _check_timings(election)
    return ProgramConfig(
        controller=controller,
        pod_name=values.pod_name,
        kubeconfig=values.kubeconfig,
        qps=values.kube_api_qps,
        burst=values.kube_api_burst,
        http_endpoint=values.http_endpoint,
        metrics_path=values.metrics_path,
        verbosity=values.v,
        leader_election=election,
        pprof_path=values.pprof_path,
    )


def _check_timings(election: LeaderElection) -> None:
    """client-go's rules: duration > deadline > 1.2 x retry period, all positive."""
    for field, value in (
        ("LEADER_ELECTION_LEASE_DURATION", election.lease_duration),
        ("LEADER_ELECTION_RENEW_DEADLINE", election.renew_deadline),
        ("LEADER_ELECTION_RETRY_PERIOD", election.retry_period),
    ):
        check_positive(field, value)
    if election.lease_duration <= election.renew_deadline:
        raise ConfigError(
            "LEADER_ELECTION_LEASE_DURATION", "must be longer than LEADER_ELECTION_RENEW_DEADLINE"
        )
    if election.renew_deadline <= 1.2 * election.retry_period:
        raise ConfigError(
            "LEADER_ELECTION_RENEW_DEADLINE",
            "must be longer than 1.2 x LEADER_ELECTION_RETRY_PERIOD",
        )


def flag_set() -> flags.FlagSet:
    """The controller's settings as one :class:`~computedomain.runtime.flags.FlagSet`."""
    return flags.FlagSet(
        PROG,
        OPTIONS,
        description="The ComputeDomain controller.",
        version=computedomain.__version__,
    )


def parse(argv: Sequence[str], env: Mapping[str, str]) -> ProgramConfig:
    """Parse argv and env into a ProgramConfig. Pure; raises ConfigError naming the setting."""
    return resolve(flag_set().parse(argv, env))


def load(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> ProgramConfig:
    """:func:`parse` for ``main``: a bad setting exits with status 2 and a message."""
    return flag_set().load(resolve, argv, env)
