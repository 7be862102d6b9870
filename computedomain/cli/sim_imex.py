"""``computedomain sim imex-path``: print a directory holding the IMEX stand-in executables.

Registered in :mod:`computedomain.cli.main` under the ``sim`` group; calls
:func:`computedomain.sim.imex.wrappers.ensure`. Put the printed directory first on a daemon's
``PATH`` to run it against the stand-ins instead of the real ``nvidia-imex``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from computedomain.sim.imex import wrappers


def register(sim_commands: Any) -> None:
    """Add ``imex-path`` to the ``sim`` sub-command group (an argparse sub-parsers object)."""
    parser: argparse.ArgumentParser = sim_commands.add_parser(
        "imex-path",
        help="print a directory with nvidia-imex and nvidia-imex-ctl stand-ins",
        description=__doc__,
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="where to create it (default: $XDG_CACHE_HOME/computedomain)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Create the wrappers if needed and print their directory; exit code 0."""
    print(wrappers.ensure(args.root))
    return 0
