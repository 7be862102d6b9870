"""The ``suffix`` DNS-name policy: upstream's daemon names under a configurable domain.

Called by the daemon (through :class:`~computedomain.policies.hookspecs.DnsNamePolicy`) when it
writes ``nodes.cfg`` and the hosts file. Index ``i`` maps to
``compute-domain-daemon-%04d.<suffix>``: distinct indices keep distinct names because the part
before the suffix is upstream's name, which is already injective.

The suffix is read once, when the policy is built (:func:`from_environment`, from
``CD_DNS_SUFFIX``; :data:`DEFAULT_SUFFIX` when unset), and validated then: it must be a DNS-1123
subdomain (lower-case letters, digits and ``-``, dot-separated labels of 1-63 characters that
start and end with a letter or digit) leaving room for the longest name this policy gives.
A bad value is a :class:`~computedomain.api.errors.ConfigError` naming ``CD_DNS_SUFFIX``. Once
built, the policy is pure: no environment reads, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import attrs

from computedomain.api import names
from computedomain.policies import ConfigError

NAME: Final = "suffix"
ENV_SUFFIX: Final = "CD_DNS_SUFFIX"
# `.internal` is reserved for private use (ICANN, 2024): it never collides with a public name.
DEFAULT_SUFFIX: Final = "imex.internal"
# Indices at or above this have more digits than the length check below allows for.
MAX_INDEX: Final = 999_999
_MAX_NAME: Final = 253
_MAX_LABEL: Final = 63
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_LONGEST_HOST: Final = len(names.dns_name(MAX_INDEX))


def validate_suffix(value: str) -> str:
    """Return ``value`` if it can follow every daemon host name; else raise ConfigError. Pure."""
    if not value:
        raise ConfigError(ENV_SUFFIX, f"must not be empty (unset it to use {DEFAULT_SUFFIX!r})")
    if value.endswith("."):
        raise ConfigError(ENV_SUFFIX, f"{value!r} must not end with '.' (write it without)")
    room = _MAX_NAME - _LONGEST_HOST - 1
    if len(value) > room:
        raise ConfigError(
            ENV_SUFFIX,
            f"{value!r} is {len(value)} characters long; at most {room} leave room for the "
            f"longest daemon name within the {_MAX_NAME}-character limit of a DNS name",
        )
    for label in value.split("."):
        if len(label) > _MAX_LABEL or not _LABEL.fullmatch(label):
            raise ConfigError(
                ENV_SUFFIX,
                f"{value!r} is not a DNS subdomain: label {label!r} must be 1-{_MAX_LABEL} "
                "lower-case letters, digits or '-', starting and ending with a letter or digit",
            )
    return value


def _check_suffix(_instance: object, _attribute: object, value: str) -> None:
    validate_suffix(value)


@attrs.frozen
class SuffixDnsNames:
    """The policy object: ``compute-domain-daemon-%04d.<suffix>``."""

    suffix: str = attrs.field(default=DEFAULT_SUFFIX, validator=_check_suffix)
    name: str = NAME

    def dns_name(self, index: int) -> str:
        """The host name of ``index``. Pure; raises ValueError outside ``[0, MAX_INDEX]``."""
        if isinstance(index, bool) or not 0 <= index <= MAX_INDEX:
            msg = f"daemon index {index!r} is outside [0, {MAX_INDEX}]"
            raise ValueError(msg)
        return f"{names.dns_name(index)}.{self.suffix}"


def from_environment(environ: Mapping[str, str]) -> SuffixDnsNames:
    """Build the policy from ``CD_DNS_SUFFIX`` in ``environ``. Raises ConfigError if invalid."""
    return SuffixDnsNames(suffix=environ.get(ENV_SUFFIX, DEFAULT_SUFFIX))
