"""Evaluate a CEL device selector against one ResourceSlice device.

The single seam between the simulated scheduler and the CEL engine: :mod:`.allocation` calls
:func:`device_matches` for every DeviceClass and request selector. The engine must be the one the
embedded API server uses (``computedomain_sim.cel``), so that a selector the API server accepts
selects the same devices here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from computedomain_sim import cel

__all__ = ["SelectorError", "device_matches"]

SelectorError = cel.CelError


def device_matches(
    expression: str,
    *,
    driver: str,
    attributes: Mapping[str, Mapping[str, Any]],
    capacity: Mapping[str, Any],
) -> bool:
    """Whether the device satisfies ``expression``; a runtime error counts as no match.

    Pure (compiled expressions are cached). Raises :class:`SelectorError` if the expression
    does not compile or does not yield a bool.
    """
    return cel.evaluate_device_selector(
        expression, driver=driver, attributes=attributes, capacity=capacity
    )
