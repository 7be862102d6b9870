"""Who runs ``nvidia-imex``: the IMEX mode and isolation settings, and their validation.

Upstream's contract (docs/compatibility.md#host-managed-imex-daemons): ``IMEX_MODE`` is
``driverManaged`` (the default: a daemon DaemonSet per ComputeDomain) or ``hostManaged`` (the
host runs ``nvidia-imex`` as a service and the driver only hands out IMEX channel 0), and the
latter needs the ``HostManagedIMEXDaemon`` feature gate. ``IMEX_ISOLATION`` is ``domain`` (the
default; empty means it too) or ``channel``, which upstream reserves and refuses. Both the
controller and the kubelet plugin validate the pair right after their feature gates, mode first,
with upstream's messages, so a bad install fails the same way on both. Pure; no I/O.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs

from computedomain.api import featuregates
from computedomain.api.errors import ConfigError


class Mode(enum.StrEnum):
    """Who owns the IMEX daemon lifecycle."""

    DRIVER_MANAGED = "driverManaged"
    HOST_MANAGED = "hostManaged"


class Isolation(enum.StrEnum):
    """How IMEX channels separate workloads (only ``domain`` is implemented, as upstream)."""

    DOMAIN = "domain"
    CHANNEL = "channel"


ENV_MODE: Final = "IMEX_MODE"
ENV_ISOLATION: Final = "IMEX_ISOLATION"
ENV_HOST_SOCKET_PATH: Final = "IMEX_HOST_SOCKET_PATH"
DEFAULT_MODE: Final = Mode.DRIVER_MANAGED
DEFAULT_ISOLATION: Final = Isolation.DOMAIN
DEFAULT_HOST_SOCKET_PATH: Final = "/etc/nvidia-imex/imex_ctrl.sock"
VALIDATION_PREFIX: Final = "imex configuration validation failed: "


@attrs.frozen
class Settings:
    """The validated pair; build it with :func:`resolve`."""

    mode: Mode = DEFAULT_MODE
    isolation: Isolation = DEFAULT_ISOLATION

    @property
    def host_managed(self) -> bool:
        return self.mode is Mode.HOST_MANAGED


def _fail(field: str, reason: str) -> ConfigError:
    return ConfigError(field, VALIDATION_PREFIX + reason)


def parse_mode(text: str, features: featuregates.Features) -> Mode:
    """``text`` as a :class:`Mode`, exactly as spelled. Pure; raises ConfigError with upstream's
    message (an empty value is unknown, as upstream has it)."""
    try:
        mode = Mode(text)
    except ValueError:
        raise _fail(ENV_MODE, f'unknown imex.mode "{text}"') from None
    if mode is Mode.HOST_MANAGED and not features.enabled(featuregates.HOST_MANAGED_IMEX_DAEMON):
        raise _fail(
            ENV_MODE,
            f'imex.mode="{Mode.HOST_MANAGED}" requires the '
            f"{featuregates.HOST_MANAGED_IMEX_DAEMON} feature gate to be enabled",
        )
    return mode


def parse_isolation(text: str) -> Isolation:
    """``text`` as an :class:`Isolation`; empty means ``domain``. Pure; raises ConfigError with
    upstream's message (``channel`` is refused under either mode)."""
    if text == "":
        return DEFAULT_ISOLATION
    try:
        isolation = Isolation(text)
    except ValueError:
        raise _fail(
            ENV_ISOLATION,
            f'unknown imex.isolation "{text}": '
            f'must be "{Isolation.DOMAIN}" or "{Isolation.CHANNEL}"',
        ) from None
    if isolation is Isolation.CHANNEL:
        raise _fail(
            ENV_ISOLATION,
            f'imex.isolation="{Isolation.CHANNEL}" is not supported yet: per-workload IMEX '
            "channel allocation is not implemented",
        )
    return isolation


def resolve(mode: str, isolation: str, features: featuregates.Features) -> Settings:
    """Validate mode, then isolation (upstream's order). Pure; raises ConfigError."""
    return Settings(parse_mode(mode, features), parse_isolation(isolation))


def controller_features(
    settings: Settings, features: featuregates.Features
) -> featuregates.Features:
    """The controller's gates under ``settings``: host-managed turns off
    ``IMEXDaemonsWithDNSNames`` and ``ComputeDomainCliques`` (nothing registers daemons, so
    nothing is tracked). Pure; the kubelet plugin forces nothing."""
    if not settings.host_managed:
        return features
    values = dict(features.values)
    values[featuregates.IMEX_DAEMONS_WITH_DNS_NAMES] = False
    values[featuregates.COMPUTE_DOMAIN_CLIQUES] = False
    featuregates.validate(values)
    return featuregates.Features(values=values)
