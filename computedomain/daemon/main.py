"""Entry point of ``cd-imex-daemon`` (console script): ``[flags] run|check`` (or ``--version``).

Only wiring: read the settings and the sub-command (:func:`~computedomain.daemon.config.load`),
then hand over to :mod:`~computedomain.daemon.check` or, through logging, to
:mod:`~computedomain.daemon.runner`. Exit codes: a bad flag or environment variable (an unknown
policy included) gives 2 with argparse's usage message, as in the other two programs; another
error before the parts start prints ``Error: <message>`` and gives 1 (upstream's code); SIGTERM
gives 0; a part that fails after the start gives 1 (upstream gives 0 there, H11; no one relies
on it). A failed ``check`` gives 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from computedomain.api.errors import ConfigError
from computedomain.daemon import check, config
from computedomain.daemon.config import DaemonConfig


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``cd-imex-daemon``; returns the exit code."""
    flag_set = config.flag_set()
    settings = flag_set.load(config.resolve, argv)
    if settings.command == config.CHECK:
        return probe(settings)
    try:
        policies = config.load_policies(settings)
    except ConfigError as exc:
        flag_set.fail(exc)
    # Imported here: the probe needs neither the API client nor asyncio.
    from computedomain.daemon import runner  # noqa: PLC0415
    from computedomain.runtime import logs, supervisor  # noqa: PLC0415

    logs.setup(min(max(settings.verbosity, 0), 10), "compute-domain-daemon")
    return supervisor.run(lambda: runner.main(settings, policies))


def probe(settings: DaemonConfig) -> int:
    """``check``: the probe asks once (upstream's check logs nothing but the ctl output)."""
    try:
        check.check(settings.clique_id, settings.imex_ctl_binary, settings.config_path)
    except check.CheckFailed as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
