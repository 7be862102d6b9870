"""Which strategy serves an allocation mode, and the startup errors of a bad choice."""

from __future__ import annotations

import pytest

from computedomain.api.errors import ConfigError
from computedomain.kubeletplugin import strategies
from computedomain.policies import registry
from computedomain.policies.hookspecs import (
    ChannelStrategies,
    ChannelStrategy,
    Deferred,
    hookimpl,
)


class _Misconfigured:
    """A plugin whose strategy's own setting is bad; it is built only when selected."""

    @hookimpl
    def computedomain_channel_strategies(self) -> ChannelStrategies:
        def build() -> ChannelStrategy:
            raise ConfigError("CD_CHANNEL_POOL", "must be a range such as 8-15")

        return (Deferred[ChannelStrategy]("pooled", build),)


def _catalog() -> registry.Catalog[ChannelStrategy]:
    return registry.load(entry_points=False, extra=[_Misconfigured()]).channels


def test_modes_name_the_builtins_by_default_and_an_unselected_bad_strategy_is_harmless() -> None:
    strategy_for = strategies.resolve(_catalog(), {})
    assert strategy_for("Single").name == "Single"
    assert strategy_for(None).name == "Single"
    assert strategy_for("All").name == "All"


def test_a_selected_strategy_with_a_bad_setting_fails_naming_both_settings() -> None:
    with pytest.raises(ConfigError) as info:
        strategies.resolve(_catalog(), {"Single": "pooled"})
    assert info.value.field == strategies.SETTING
    assert info.value.reason == "Single=pooled: CD_CHANNEL_POOL: must be a range such as 8-15"
