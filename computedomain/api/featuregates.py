"""Feature gates: upstream's names, defaults, ``FEATURE_GATES`` syntax and dependency rules.

Every program resolves its gates once, at start, into a frozen :class:`Features` value and
passes it down; nothing reads a global. Parsing follows Kubernetes component-base
(docs/compatibility.md#flags-environment-and-feature-gates): ``Name=bool`` items separated by
commas, surrounding whitespace trimmed, empty items skipped (so Helm's trailing comma is fine),
booleans as Go's ``strconv.ParseBool`` accepts them, unknown names rejected.
``AllAlpha``/``AllBeta`` switch every alpha/beta gate that is not set explicitly. The controller
hands its full gate map to the daemons, sorted, as ``Name=bool,``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import attrs

from computedomain.api.errors import ConfigError


class Stage(enum.StrEnum):
    """A gate's maturity, spelled as upstream's registry spells it."""

    ALPHA = "Alpha"
    BETA = "Beta"
    GA = "GA"


@attrs.frozen
class Gate:
    """One known gate."""

    name: str
    default: bool
    stage: Stage


COMPUTE_DOMAIN_CLIQUES: Final = "ComputeDomainCliques"
IMEX_DAEMONS_WITH_DNS_NAMES: Final = "IMEXDaemonsWithDNSNames"
CRASH_ON_NVLINK_FABRIC_ERRORS: Final = "CrashOnNVLinkFabricErrors"
TIME_SLICING_SETTINGS: Final = "TimeSlicingSettings"
MPS_SUPPORT: Final = "MPSSupport"
PASSTHROUGH_SUPPORT: Final = "PassthroughSupport"
DYNAMIC_MIG: Final = "DynamicMIG"
NVML_DEVICE_HEALTH_CHECK: Final = "NVMLDeviceHealthCheck"
DEVICE_METADATA: Final = "DeviceMetadata"
DRA_LIST_TYPE_ATTRIBUTES: Final = "DRAListTypeAttributes"
CONSUMABLE_SHARES: Final = "ConsumableShares"
HOST_MANAGED_IMEX_DAEMON: Final = "HostManagedIMEXDaemon"
FABRIC_MANAGER_PARTITIONING: Final = "FabricManagerPartitioning"
CONTEXTUAL_LOGGING: Final = "ContextualLogging"
LOGGING_ALPHA_OPTIONS: Final = "LoggingAlphaOptions"
LOGGING_BETA_OPTIONS: Final = "LoggingBetaOptions"
ALL_ALPHA: Final = "AllAlpha"
ALL_BETA: Final = "AllBeta"

KNOWN_GATES: Final[Mapping[str, Gate]] = {
    g.name: g
    for g in (
        Gate(COMPUTE_DOMAIN_CLIQUES, True, Stage.BETA),
        Gate(IMEX_DAEMONS_WITH_DNS_NAMES, True, Stage.BETA),
        Gate(CRASH_ON_NVLINK_FABRIC_ERRORS, True, Stage.BETA),
        Gate(TIME_SLICING_SETTINGS, False, Stage.ALPHA),
        Gate(MPS_SUPPORT, False, Stage.ALPHA),
        Gate(PASSTHROUGH_SUPPORT, False, Stage.ALPHA),
        Gate(DYNAMIC_MIG, False, Stage.ALPHA),
        Gate(NVML_DEVICE_HEALTH_CHECK, False, Stage.ALPHA),
        Gate(DEVICE_METADATA, False, Stage.ALPHA),
        Gate(DRA_LIST_TYPE_ATTRIBUTES, False, Stage.ALPHA),
        Gate(CONSUMABLE_SHARES, False, Stage.ALPHA),
        # Since upstream v0.5: the host owns nvidia-imex (permits IMEX_MODE=hostManaged), and
        # single-node NVLink systems skip GPUs whose fabric registration is not complete.
        Gate(HOST_MANAGED_IMEX_DAEMON, False, Stage.ALPHA),
        Gate(FABRIC_MANAGER_PARTITIONING, False, Stage.ALPHA),
        # Logging gates live in the same registry upstream; ContextualLogging is switched on
        # when the registry is built, and FEATURE_GATES can still override it.
        Gate(CONTEXTUAL_LOGGING, True, Stage.BETA),
        Gate(LOGGING_ALPHA_OPTIONS, False, Stage.ALPHA),
        Gate(LOGGING_BETA_OPTIONS, True, Stage.BETA),
        Gate(ALL_ALPHA, False, Stage.ALPHA),
        Gate(ALL_BETA, False, Stage.BETA),
    )
}

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@attrs.frozen
class Features:
    """The resolved value of every known gate. Build it with :func:`parse`."""

    values: Mapping[str, bool]

    def enabled(self, name: str) -> bool:
        if name not in self.values:
            msg = f"unrecognized feature gate: {name}"
            raise KeyError(msg)
        return self.values[name]

    @property
    def compute_domain_cliques(self) -> bool:
        return self.values[COMPUTE_DOMAIN_CLIQUES]

    @property
    def imex_daemons_with_dns_names(self) -> bool:
        return self.values[IMEX_DAEMONS_WITH_DNS_NAMES]

    @property
    def crash_on_nvlink_fabric_errors(self) -> bool:
        return self.values[CRASH_ON_NVLINK_FABRIC_ERRORS]

    def render(self) -> str:
        """Every gate as ``Name=bool,``, sorted by name, trailing comma (the daemon DS env)."""
        return "".join(
            f"{name}={'true' if self.values[name] else 'false'}," for name in sorted(self.values)
        )


def _parse_bool(name: str, text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(
        "FEATURE_GATES",
        f'invalid value of {name}={text}, err: strconv.ParseBool: parsing "{text}": invalid syntax',
    )


def parse_overrides(text: str) -> dict[str, bool]:
    """The explicit ``Name=bool`` settings in ``text``. Pure; raises ConfigError."""
    overrides: dict[str, bool] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ConfigError("FEATURE_GATES", f"missing bool value for {name}")
        if name not in KNOWN_GATES:
            raise ConfigError("FEATURE_GATES", f"unrecognized feature gate: {name}")
        overrides[name] = _parse_bool(name, value.strip())
    return overrides


def validate(values: Mapping[str, bool]) -> None:
    """Enforce upstream's dependency rules; raises ConfigError listing every violation."""
    problems: list[str] = []
    if values[COMPUTE_DOMAIN_CLIQUES] and not values[IMEX_DAEMONS_WITH_DNS_NAMES]:
        problems.append(f"{COMPUTE_DOMAIN_CLIQUES} requires {IMEX_DAEMONS_WITH_DNS_NAMES}")
    for other in (PASSTHROUGH_SUPPORT, NVML_DEVICE_HEALTH_CHECK, MPS_SUPPORT):
        if values[DYNAMIC_MIG] and values[other]:
            problems.append(f"{DYNAMIC_MIG} and {other} are mutually exclusive")
    if values[PASSTHROUGH_SUPPORT] and values[NVML_DEVICE_HEALTH_CHECK]:
        problems.append(
            f"{PASSTHROUGH_SUPPORT} and {NVML_DEVICE_HEALTH_CHECK} are mutually exclusive"
        )
    if values[DEVICE_METADATA] and not values[PASSTHROUGH_SUPPORT]:
        problems.append(f"{DEVICE_METADATA} requires {PASSTHROUGH_SUPPORT}")
    if problems:
        raise ConfigError("FEATURE_GATES", "feature gate validation failed: " + "; ".join(problems))


def parse(text: str = "") -> Features:
    """Resolve ``FEATURE_GATES`` text into every gate's value, validated. Pure."""
    overrides = parse_overrides(text)
    values = {name: gate.default for name, gate in KNOWN_GATES.items()}
    values.update(overrides)
    for bulk, stage in ((ALL_ALPHA, Stage.ALPHA), (ALL_BETA, Stage.BETA)):
        if values[bulk]:
            for name, gate in KNOWN_GATES.items():
                if (
                    gate.stage == stage
                    and name not in overrides
                    and name not in (ALL_ALPHA, ALL_BETA)
                ):
                    values[name] = True
    validate(values)
    return Features(values=values)
