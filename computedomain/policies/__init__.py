"""Extension points (pluggy hook specs) and the built-in policies that reproduce upstream.

This package is the public surface for plugin authors: :data:`__all__` names what a plugin may
import (the hook markers and specifications, the requests its policies receive, the policy
protocols and :class:`ConfigError` for a bad setting of its own), defined in
:mod:`computedomain.policies.hookspecs`. Anything else (the registry, the built-ins) is internal
and may change without notice. ``tests/unit/policies/test_public_surface.py`` fails when
this surface changes without :data:`__all__` changing with it.
"""

from computedomain.api.errors import ConfigError
from computedomain.policies.hookspecs import (
    PROJECT,
    ChannelRequest,
    ChannelStrategies,
    ChannelStrategy,
    Deferred,
    DnsNamePolicies,
    DnsNamePolicy,
    HookSpecs,
    IndexPolicies,
    IndexPolicy,
    IndexRequest,
    hookimpl,
    hookspec,
)

__all__ = [
    "PROJECT",
    "ChannelRequest",
    "ChannelStrategies",
    "ChannelStrategy",
    "ConfigError",
    "Deferred",
    "DnsNamePolicies",
    "DnsNamePolicy",
    "HookSpecs",
    "IndexPolicies",
    "IndexPolicy",
    "IndexRequest",
    "hookimpl",
    "hookspec",
]
