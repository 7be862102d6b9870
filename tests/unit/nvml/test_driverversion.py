"""The dotted driver-version comparison and the DNS-names gate's precondition."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.nvml import driverversion


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("570.158.01", "570.158.1", 0),
        ("570.158.01", "570.158.01", 0),
        ("570.158", "570.158.0", 0),
        ("570.133.20", "570.158.01", -1),
        ("575.51.03", "570.158.01", 1),
        ("570.158.2", "570.158.01", 1),
        ("1000.1", "999.999.999", 1),
    ],
)
def test_compare(left: str, right: str, expected: int) -> None:
    assert driverversion.compare(left, right) == expected
    assert driverversion.compare(right, left) == -expected


def test_check_dns_names() -> None:
    driverversion.check_dns_names("570.158.01")
    driverversion.check_dns_names("580.95.05")
    with pytest.raises(driverversion.DriverVersionError, match="IMEXDaemonsWithDNSNames=false"):
        driverversion.check_dns_names("565.57.01")


@pytest.mark.parametrize("bad", ["", "570.abc", "570..1", "v570.1", "570.1-rc"])
def test_unparseable(bad: str) -> None:
    with pytest.raises(driverversion.DriverVersionError, match="cannot parse"):
        driverversion.parse(bad)


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=4), st.integers(0, 3))
def test_leading_zeros_and_trailing_zero_parts_never_matter(parts: list[int], pad: int) -> None:
    plain = ".".join(str(p) for p in parts)
    padded = ".".join(f"{p:03d}" for p in parts) + ".0" * pad
    assert driverversion.compare(plain, padded) == 0
