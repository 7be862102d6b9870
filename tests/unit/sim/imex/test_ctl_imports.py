"""The ``nvidia-imex-ctl`` stand-in runs as a fresh process for every readiness probe of every
simulated IMEX daemon (once a second during start-up), so what it imports is its cost: it must
not load asyncio, attrs or logging (bench/e2e.py measures the effect)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("asyncio", "attrs", "logging", "kubernetes", "aiohttp")


def test_the_ctl_stand_in_loads_no_heavy_module() -> None:
    code = (
        "import json, sys; import computedomain.sim.imex.ctl; "
        f"print(json.dumps(sorted(set({list(HEAVY)!r}) & set(sys.modules))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(result.stdout) == []
