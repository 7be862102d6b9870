"""Loading policies from the built-ins and the ``computedomain`` entry-point group.

Components call :func:`load` once at start (in wiring code) and then look a policy up by the
name their configuration gives; an unknown name is a
:class:`~computedomain.api.errors.ConfigError` listing the valid names, and two plugins that
claim the same name are refused rather than silently shadowing each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

import attrs
import pluggy

from computedomain.api.errors import ConfigError
from computedomain.policies import builtins, hookspecs

P = TypeVar("P")


@attrs.frozen
class Catalog(Generic[P]):
    """Policies of one kind, by name."""

    kind: str
    setting: str  # the flag/env that selects one, for error messages
    by_name: Mapping[str, P]

    def get(self, name: str) -> P:
        try:
            return self.by_name[name]
        except KeyError:
            valid = ", ".join(sorted(self.by_name))
            raise ConfigError(
                self.setting, f"unknown {self.kind} {name!r} (valid: {valid})"
            ) from None

    def names(self) -> list[str]:
        return sorted(self.by_name)


@attrs.frozen
class Policies:
    index: Catalog[hookspecs.IndexPolicy]
    dns_names: Catalog[hookspecs.DnsNamePolicy]
    channels: Catalog[hookspecs.ChannelStrategy]


def _collect(kind: str, setting: str, results: Iterable[Iterable[P]]) -> Catalog[P]:
    by_name: dict[str, P] = {}
    for batch in results:
        for policy in batch:
            name = getattr(policy, "name", None)
            if not isinstance(name, str) or not name:
                raise ConfigError(setting, f"a {kind} without a name: {policy!r}")
            if name in by_name:
                raise ConfigError(setting, f"two plugins provide the {kind} {name!r}")
            by_name[name] = policy
    return Catalog(kind=kind, setting=setting, by_name=by_name)


def plugin_manager(
    *, entry_points: bool = True, extra: Iterable[object] = ()
) -> pluggy.PluginManager:
    """A plugin manager with the hook specs, the built-ins, installed plugins and ``extra``."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs.HookSpecs)
    pm.register(builtins.BuiltinPolicies(), name="builtin")
    if entry_points:
        pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    for plugin in extra:
        pm.register(plugin)
    return pm


def load(*, entry_points: bool = True, extra: Iterable[object] = ()) -> Policies:
    """Collect every registered policy. Raises ConfigError on duplicate names."""
    hook = plugin_manager(entry_points=entry_points, extra=extra).hook
    return Policies(
        index=_collect("index policy", "INDEX_POLICY", hook.computedomain_index_policies()),
        dns_names=_collect(
            "DNS-name policy", "DNS_NAME_POLICY", hook.computedomain_dns_name_policies()
        ),
        channels=_collect(
            "channel allocation strategy",
            "CHANNEL_STRATEGY",
            hook.computedomain_channel_strategies(),
        ),
    )
