"""``cd-imex-daemon check`` runs as a fresh process for every probe of every daemon pod (once a
second while a domain forms), so what it loads is its cost: not logging, asyncio or the API
client, which only ``run`` needs (bench/e2e.py measures the effect)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("asyncio", "logging", "kubernetes", "aiohttp", "grpc", "computedomain.kube")


def test_the_check_path_loads_no_heavy_module() -> None:
    code = (
        "import json, sys\n"
        "from computedomain.daemon import main\n"
        "code = main.main(['-v', '0', 'check'])\n"
        f"heavy = sorted(m for m in sys.modules if m.startswith({HEAVY!r}))\n"
        "print(json.dumps([code, heavy]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "CLIQUE_ID"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "check succeeded (noop, clique ID is empty)"
    assert json.loads(lines[-1]) == [0, []]
