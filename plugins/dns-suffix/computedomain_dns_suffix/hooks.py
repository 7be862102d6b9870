"""The pluggy hook implementation the ``computedomain`` entry point names.

``computedomain.policies.registry.load()`` registers :data:`plugin` and asks it for its DNS-name
policies. The policy is :class:`~computedomain.policies.hookspecs.Deferred`: ``CD_DNS_SUFFIX``
is read when a component selects ``suffix`` (``cd-imex-daemon`` with ``DNS_NAME_POLICY=suffix``,
once, at start), so an invalid suffix stops that daemon at start with a ConfigError naming the
variable, and never a component that uses another policy.
"""

from __future__ import annotations

import os

from computedomain.policies import Deferred, DnsNamePolicies, DnsNamePolicy, hookimpl
from computedomain_dns_suffix.policy import NAME, from_environment


class SuffixPlugin:
    """Provides the ``suffix`` DNS-name policy, configured from the process environment."""

    @hookimpl
    def computedomain_dns_name_policies(self) -> DnsNamePolicies:
        return (Deferred[DnsNamePolicy](NAME, lambda: from_environment(os.environ)),)


plugin = SuffixPlugin()
