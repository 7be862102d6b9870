"""computedomain plugin: the ``suffix`` DNS-name policy for ``cd-imex-daemon``.

Daemon names become ``compute-domain-daemon-NNNN.<suffix>`` (e.g.
``compute-domain-daemon-0003.imex.example.com``), the suffix coming from ``CD_DNS_SUFFIX``.
The policy is in :mod:`.policy`; :mod:`.hooks` builds it from the environment and registers it
through the ``computedomain`` entry-point group.
"""

from computedomain_dns_suffix.policy import (
    DEFAULT_SUFFIX,
    ENV_SUFFIX,
    MAX_INDEX,
    NAME,
    SuffixDnsNames,
    from_environment,
)

__all__ = [
    "DEFAULT_SUFFIX",
    "ENV_SUFFIX",
    "MAX_INDEX",
    "NAME",
    "SuffixDnsNames",
    "from_environment",
]
