"""Loading policies from the built-ins and the ``computedomain`` entry-point group.

Components call :func:`load` once at start (in wiring code) and then look a policy up by the
name their configuration gives; an unknown name is a
:class:`~computedomain.api.errors.ConfigError` listing the valid names, and two plugins that
claim the same name are refused rather than silently shadowing each other.

A policy's own configuration fails only the component that selects it: a
:class:`~computedomain.policies.hookspecs.Deferred` policy is built (its settings read and
checked) on the first :meth:`Catalog.get` of its name, and a plugin whose hook raises is
recorded rather than stopping the load; its error is reported when a name that no loaded
plugin provides is asked for (it may be the name that plugin would have provided).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

import attrs
import pluggy

from computedomain.api.errors import ConfigError
from computedomain.policies import builtins, hookspecs
from computedomain.policies.hookspecs import Deferred

P = TypeVar("P")


@attrs.frozen
class Catalog(Generic[P]):
    """Policies of one kind, by name; deferred ones are built on first selection."""

    kind: str
    setting: str  # the flag/env that selects one, for error messages
    by_name: Mapping[str, P | Deferred[P]]
    # plugin name -> why its hook failed; named in the error for an unknown policy
    broken: Mapping[str, str] = attrs.field(factory=dict)
    _built: dict[str, P] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def get(self, name: str) -> P:
        """The policy called ``name``, built if deferred (once; a failed build is retried).

        Raises ConfigError: naming :attr:`setting` for an unknown name (listing the valid ones
        and any plugin that failed to load), or naming the policy's own setting when building
        it fails.
        """
        if name in self._built:
            return self._built[name]
        try:
            entry = self.by_name[name]
        except KeyError:
            valid = ", ".join(sorted(self.by_name))
            failed = "".join(
                f"; plugin {plugin!r} failed to load: {why}"
                for plugin, why in sorted(self.broken.items())
            )
            raise ConfigError(
                self.setting, f"unknown {self.kind} {name!r} (valid: {valid}){failed}"
            ) from None
        if not isinstance(entry, Deferred):
            return entry
        policy = entry.build()
        if getattr(policy, "name", None) != name:
            raise ConfigError(
                self.setting, f"the {self.kind} {name!r} was built as {policy!r}, another name"
            )
        self._built[name] = policy
        return policy

    def names(self) -> list[str]:
        return sorted(self.by_name)


@attrs.frozen
class Policies:
    index: Catalog[hookspecs.IndexPolicy]
    dns_names: Catalog[hookspecs.DnsNamePolicy]
    channels: Catalog[hookspecs.ChannelStrategy]


def _collect(kind: str, setting: str, caller: pluggy.HookCaller) -> Catalog[Any]:
    """Call every implementation of one hook on its own, so that one failing plugin is only
    recorded. Raises ConfigError for a nameless policy or two policies with one name."""
    by_name: dict[str, Any] = {}
    broken: dict[str, str] = {}
    for impl in reversed(caller.get_hookimpls()):  # pluggy calls the last registered first
        try:
            batch = impl.function()
        except Exception as exc:  # a third-party hook; any failure is reported at selection
            broken[impl.plugin_name] = str(exc) or type(exc).__name__
            continue
        if not isinstance(batch, Iterable):
            broken[impl.plugin_name] = f"its hook returned {batch!r}, not a sequence of {kind}s"
            continue
        for policy in batch:
            name = getattr(policy, "name", None)
            if not isinstance(name, str) or not name:
                raise ConfigError(setting, f"a {kind} without a name: {policy!r}")
            if name in by_name:
                raise ConfigError(setting, f"two plugins provide the {kind} {name!r}")
            by_name[name] = policy
    return Catalog(kind=kind, setting=setting, by_name=by_name, broken=broken)


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
    """Collect every registered policy, building none of the deferred ones. Raises ConfigError
    on duplicate or missing names; a plugin whose hook raises is recorded, not raised."""
    hook = plugin_manager(entry_points=entry_points, extra=extra).hook
    return Policies(
        index=_collect("index policy", "INDEX_POLICY", hook.computedomain_index_policies),
        dns_names=_collect(
            "DNS-name policy", "DNS_NAME_POLICY", hook.computedomain_dns_name_policies
        ),
        channels=_collect(
            "channel allocation strategy", "CHANNEL_STRATEGY", hook.computedomain_channel_strategies
        ),
    )
