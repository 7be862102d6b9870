"""The pluggy hook implementation the ``computedomain`` entry point names.

``computedomain.policies.registry.load()`` registers :data:`plugin` and asks it for its DNS-name
policies; that call is when ``CD_DNS_SUFFIX`` is read (once per process, at start), so an
invalid suffix stops the daemon at start with a ConfigError naming the variable.
``cd-imex-daemon`` then picks ``suffix`` by name (``DNS_NAME_POLICY``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from computedomain.policies.hookspecs import DnsNamePolicy, hookimpl
from computedomain_dns_suffix.policy import from_environment


class SuffixPlugin:
    """Provides the ``suffix`` DNS-name policy, configured from the process environment."""

    @hookimpl
    def computedomain_dns_name_policies(self) -> Sequence[DnsNamePolicy]:
        return (from_environment(os.environ),)


plugin = SuffixPlugin()
