"""Pure parsers and checks of the controller's setting values (the texts of its flags and
environment variables), each raising :class:`~computedomain.api.errors.ConfigError` naming the
setting. Used by :mod:`computedomain.controller.config`.
"""

from __future__ import annotations

import json
import re
from typing import Final

from computedomain.api import names, validation
from computedomain.api.errors import ConfigError

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
