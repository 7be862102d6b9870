"""The driver-version precondition of the ``IMEXDaemonsWithDNSNames`` feature gate.

Upstream refuses to start with the gate on and a driver older than 570.158.01, the first driver
whose IMEX resolves DNS names in its nodes file (docs/compatibility.md#clique-id-discovery). The
comparison is a generic dotted one: numeric components compared in order, missing components
count as zero, leading zeros do not matter (``570.158.01`` equals ``570.158.1``). Pure
functions.
"""

from __future__ import annotations

from typing import Final

from computedomain.api.errors import PermanentError

DNS_NAMES_MINIMUM: Final = "570.158.01"


class DriverVersionError(PermanentError):
    """The driver is too old for the configuration, or its version cannot be read."""


def parse(version: str) -> tuple[int, ...]:
    """``"570.158.01"`` -> ``(570, 158, 1)``. Raises DriverVersionError on anything else."""
    parts = version.strip().split(".")
    if not all(p.isdigit() for p in parts):
        msg = f"cannot parse driver version {version!r} (want dotted numbers like 570.158.01)"
        raise DriverVersionError(msg)
    return tuple(int(p) for p in parts)


def compare(left: str, right: str) -> int:
    """-1, 0 or 1 as ``left`` is older than, equal to or newer than ``right``."""
    a, b = parse(left), parse(right)
    width = max(len(a), len(b))
    a += (0,) * (width - len(a))
    b += (0,) * (width - len(b))
    return (a > b) - (a < b)


def check_dns_names(version: str, *, minimum: str = DNS_NAMES_MINIMUM) -> None:
    """Raise DriverVersionError, with the way out, when ``version`` is below ``minimum``."""
    if compare(version, minimum) < 0:
        msg = (
            f"NVIDIA driver {version} is older than {minimum}, which the feature gate "
            "IMEXDaemonsWithDNSNames needs; upgrade the driver or set "
            "featureGates.IMEXDaemonsWithDNSNames=false "
            "(FEATURE_GATES=IMEXDaemonsWithDNSNames=false)"
        )
        raise DriverVersionError(msg)
