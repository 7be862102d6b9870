"""String ``format`` checks for CRD schemas: the cheap subset of kube-openapi's ``strfmt`` registry.

Called by :mod:`.schema_validators`. kube-apiserver strips formats it does not support before
validating, so an unknown format (or one not listed here) is not checked, which is also what a
server that does not know a format does. A failed check reads
``spec.x: Invalid value: "bad": spec.x in body must be of type uuid: "bad"``.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from typing import Final

_HEX = "[0-9a-f]"
_UUID: Final = re.compile(
    rf"^{_HEX}{{8}}-?{_HEX}{{4}}-?{_HEX}{{4}}-?{_HEX}{{4}}-?{_HEX}{{12}}$", re.I
)
_UUID_V: Final = {
    v: re.compile(rf"^{_HEX}{{8}}-{_HEX}{{4}}-{v}{_HEX}{{3}}-[89ab]{_HEX}{{3}}-{_HEX}{{12}}$", re.I)
    for v in "345"
}
_DATE_TIME: Final = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_DATE: Final = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
_HOSTNAME: Final = re.compile(
    r"^(?=.{1,255}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)
_MAC: Final = re.compile(r"^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$", re.I)
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+$")
_DURATION: Final = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w))+$|^0$")


def _ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def _ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def _cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _matcher(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: pattern.match(value) is not None


FORMATS: Final[dict[str, Callable[[str], bool]]] = {
    "uuid": _matcher(_UUID),
    "uuid3": _matcher(_UUID_V["3"]),
    "uuid4": _matcher(_UUID_V["4"]),
    "uuid5": _matcher(_UUID_V["5"]),
    "date-time": _matcher(_DATE_TIME),
    "datetime": _matcher(_DATE_TIME),
    "date": _matcher(_DATE),
    "hostname": _matcher(_HOSTNAME),
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": _cidr,
    "mac": _matcher(_MAC),
    "email": _matcher(_EMAIL),
    "byte": _byte,
    "duration": _matcher(_DURATION),
}
