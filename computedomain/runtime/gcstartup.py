"""Importing a program's parts with the cyclic garbage collector paused.

A program's start-up imports its dependencies: tens of thousands of objects (modules, classes,
functions, compiled patterns) that live as long as the process. While they are created the
collector runs again and again (every 700 allocations) and finds nothing to free: about a tenth
of what ``cd-imex-daemon run`` spends on its imports (the Kubernetes client, aiohttp,
pydantic), measured as 410 -> 374 ms of CPU for ``import computedomain.daemon.runner``. A
domain that forms starts one daemon per node at once, each its own process.

:func:`paused` switches the collector off for the block, then freezes everything created so far
(``gc.freeze``: the permanent generation, which later collections do not scan, so the process's
long-lived start-up state is not walked again by every full collection) and switches it back on.
Called by the programs' wiring around their heavy imports; no other effect.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block; afterwards what exists is frozen and the
    collector runs again (if it ran before)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
