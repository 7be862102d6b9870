"""Entry point of ``cd-imex-daemon`` (console script): ``[flags] run|check`` (or ``--version``).

Only wiring: parse flags and environment with :data:`~computedomain.daemon.options.OPTIONS`,
then hand over to :mod:`~computedomain.daemon.check` or, through a
:class:`~computedomain.daemon.config.DaemonConfig` and logging, to
:mod:`~computedomain.daemon.runner`. ``check`` is the pods' exec probe, a fresh process every
second per daemon while a domain forms, so what only ``run`` needs (the attrs config, logging,
asyncio, the API client) is imported on the ``run`` branch alone. Exit codes (daemon.md §1):
an error before the parts start prints ``Error: <message>`` and gives 1; SIGTERM gives 0; a
part that fails after the start gives 1 (upstream gives 0 there, H11; no one relies on it).

The checkout's launcher (``bin/cd-imex-daemon``) starts the interpreter without ``site`` (``-S``,
with the checkout on ``sys.path``): the probe needs only the standard library and this package,
and ``site``, with a virtual environment's ``.pth`` files, was about 5 ms of each probe's CPU
(``python -c pass`` 12.9 ms, with ``-S`` 8.1 ms, 40 runs each). ``run`` then loads ``site``
itself (:func:`ensure_site`) before it imports anything from outside the standard library.
"""

from __future__ import annotations

import sys

import computedomain
from computedomain.api.errors import ConfigError
from computedomain.daemon import check, options
from computedomain.runtime.flags import FlagSet

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the probe's cost)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from computedomain.runtime.flags import Values

PROG = "cd-imex-daemon"
COMMANDS = ("run", "check")


def split_command(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The sub-command and the remaining flags. Pure.

    Flags may come before or after the sub-command (upstream puts them before); every flag
    takes a value, as ``--flag value`` or ``--flag=value``; ``-v N`` is klog's ``--v N``.
    """
    command: str | None = None
    rest: list[str] = []
    args = ["--v" if a == "-v" else ("--v=" + a[3:] if a.startswith("-v=") else a) for a in argv]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and arg not in ("-h", "--help"):
            rest.append(arg)
            if "=" not in arg and i + 1 < len(args):
                rest.append(args[i + 1])
                i += 1
        elif command is None and arg in COMMANDS:
            command = arg
        else:
            rest.append(arg)
        i += 1
    return command, rest


def flagset() -> FlagSet:
    return FlagSet(PROG, options.OPTIONS, description="ComputeDomain IMEX daemon: run | check")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``cd-imex-daemon``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--version" in args:
        print(computedomain.__version__)
        return 0
    command, rest = split_command(args)
    flags = flagset()
    ns = flags.parse(rest)
    if command is None:
        flags.fail(f"a sub-command is required: {' | '.join(COMMANDS)}")
    if command == "check":
        return probe(ns)
    return run(ns)


def probe(ns: Values) -> int:
    """``check``: the settings are validated as for ``run``, then the probe asks once.

    No logging set-up and no :class:`~computedomain.daemon.config.DaemonConfig`: check only
    prints (upstream's check logs nothing but the ctl output), and it runs every second.
    """
    try:
        options.validate(ns)
        check.check(ns.cliqueid, ns.imex_ctl_binary, options.config_path(ns.imexd_dir))
    except (ConfigError, check.CheckFailed) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


def ensure_site() -> None:
    """Add the site directories (the virtual environment's packages) when the interpreter was
    started without them (``-S``, as the checkout's launcher starts it); else nothing."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site  # noqa: PLC0415

        site.main()


def run(ns: Values) -> int:
    """``run``: resolve the config, set up logging, and supervise the daemon's parts."""
    ensure_site()
    # Imported here, not at the top (see the module docstring), without the garbage collector
    # and without reading the trust store for contexts nobody uses.
    from computedomain.runtime import gcstartup, tlsstartup  # noqa: PLC0415

    with gcstartup.paused(), tlsstartup.deferred():
        from computedomain.daemon import config  # noqa: PLC0415

        try:
            settings = config.load(ns)
        except ConfigError as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return 1
        from computedomain.daemon import runner  # noqa: PLC0415
        from computedomain.runtime import logs, supervisor  # noqa: PLC0415

    logs.setup(min(max(settings.verbosity, 0), 10), "compute-domain-daemon")
    return supervisor.run(lambda: runner.main(settings))


if __name__ == "__main__":
    sys.exit(main())
