"""Which channel allocation strategy serves a claim's allocationMode.

By default the mode names the strategy (``Single``, ``All``: the built-ins, which reproduce
upstream). ``--channel-strategy-map`` / ``CHANNEL_STRATEGY_MAP`` (e.g. ``Single=per-domain``)
lets an operator serve a mode with another registered strategy (a plugin from the
``computedomain`` entry-point group). Resolved once at startup: an unknown strategy name is a
ConfigError listing the valid ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from computedomain.api.errors import ConfigError
from computedomain.policies.hookspecs import ChannelStrategy
from computedomain.policies.registry import Catalog

SETTING = "--channel-strategy-map/CHANNEL_STRATEGY_MAP"
MODES = ("Single", "All")


def resolve(
    catalog: Catalog[ChannelStrategy], mapping: Mapping[str, str]
) -> Callable[[str | None], ChannelStrategy]:
    """A lookup from mode to strategy; raises ConfigError naming the setting on bad names."""
    chosen: dict[str, ChannelStrategy] = {}
    for mode in MODES:
        name = mapping.get(mode, mode)
        try:
            chosen[mode] = catalog.get(name)
        except ConfigError as exc:  # unknown, or the strategy's own setting is bad
            detail = exc.reason if exc.field == catalog.setting else str(exc)
            raise ConfigError(SETTING, f"{mode}={name}: {detail}") from None
    unknown = sorted(set(mapping) - set(MODES))
    if unknown:
        raise ConfigError(
            SETTING, f"unknown allocation mode {unknown[0]!r} (valid: {', '.join(MODES)})"
        )

    def strategy_for(mode: str | None) -> ChannelStrategy:
        return chosen["All" if mode == "All" else "Single"]

    return strategy_for
