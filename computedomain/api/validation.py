"""Checks on values that come from API objects before they become paths, names or labels.

A ComputeDomain UID becomes a directory name on every node (``domains/<uid>``), a claim UID
becomes a CDI file name, a clique ID becomes part of an object name. Upstream trusted these
(PR #1346 fixed a path traversal through ``domainID``); we check every one, in one place.
All functions are pure and raise :class:`~computedomain.api.errors.ConfigError` naming the field.
"""

from __future__ import annotations

import re

from computedomain.api.errors import ConfigError

# A single path component: starts alphanumeric, then letters, digits, '.', '_' or '-'. No
# separators, no NUL, never '.' or '..', bounded so it fits any filesystem's NAME_MAX.
_SAFE_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
# The clique ID is "<cluster UUID>.<clique id>" (NVML), or "" on nodes without NVLink fabric:
# 36 characters of hex digits and '-', a '.', 1 to 10 ASCII digits.
_CLIQUE_ID = re.compile(r"[0-9a-fA-F-]{36}\.[0-9]{1,10}")


def is_clique_id(value: str) -> bool:
    """Whether ``value`` is ``<cluster UUID>.<clique id>`` (see above). Pure."""
    return _CLIQUE_ID.fullmatch(value) is not None


def safe_path_component(field: str, value: str) -> str:
    """Return ``value`` if it can be used as one path component; else raise ConfigError."""
    if not value:
        raise ConfigError(field, "must not be empty")
    if not _SAFE_COMPONENT.fullmatch(value) or set(value) == {"."}:
        raise ConfigError(
            field,
            f"{value!r} is not a single safe path component "
            "(letters, digits, '.', '_' or '-', starting with a letter or digit, "
            "at most 253 characters)",
        )
    return value


def dns1123_label(field: str, value: str) -> str:
    """Return ``value`` if it is a DNS-1123 label (63 characters at most)."""
    if len(value) > 63 or not _DNS1123_LABEL.fullmatch(value):
        raise ConfigError(field, f"{value!r} is not a valid DNS-1123 label")
    return value


def dns1123_subdomain(field: str, value: str) -> str:
    """Return ``value`` if it is a DNS-1123 subdomain (object names of most kinds)."""
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
        raise ConfigError(field, f"{value!r} is not a valid DNS-1123 subdomain")
    return value


def label_value(field: str, value: str) -> str:
    """Return ``value`` if it is a valid Kubernetes label value (may be empty)."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ConfigError(field, f"{value!r} is not a valid label value")
    return value


def clique_id(field: str, value: str) -> str:
    """Return ``value`` if it is empty (no fabric) or ``<cluster UUID>.<clique id>``."""
    if value and not is_clique_id(value):
        raise ConfigError(
            field, f"{value!r} is not a clique ID ('<cluster UUID>.<clique id>' or empty)"
        )
    return value
