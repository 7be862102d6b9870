"""``computedomain sim imex-path``: print a directory holding the IMEX stand-in executables.

Registered in the ``sim`` group through the ``computedomain.commands`` entry points; calls
:func:`computedomain_sim.imex.wrappers.ensure`. Put the printed directory first on a daemon's
``PATH`` to run it against the stand-ins instead of the real ``nvidia-imex``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from computedomain_sim.imex import wrappers

if TYPE_CHECKING:
    from computedomain.cli.main import Commands


def register(commands: Commands) -> None:
    sim = commands.group("sim", "the embedded simulated cluster")
    parser = sim.add(
        "imex-path", "print a directory with nvidia-imex and nvidia-imex-ctl stand-ins", run
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="where to create it (default: $XDG_CACHE_HOME/computedomain)",
    )


def run(args: argparse.Namespace) -> int:
    """Create the wrappers if needed and print their directory; exit code 0."""
    print(wrappers.ensure(args.root))
    return 0
