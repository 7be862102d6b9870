"""``computedomain sim apiserver --faults``: the spec and its seed are printed, a bad spec is a
usage error naming the key, faults change at run time, the counts are printed at exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import requests

from computedomain_sim.apiserver import testing
from computedomain_sim.faults import control

CMD = [sys.executable, "-m", "computedomain.cli.main", "sim", "apiserver", "--port", "0"]


def test_bad_spec_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CMD, "--kubeconfig", str(tmp_path / "kc"), "--faults", "409=0.1,latency=fast"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "argument --faults: rule 1: latency: 'fast' is not a duration" in done.stderr
    assert "Traceback" not in done.stderr


def test_faults_from_the_command_line_and_at_run_time(tmp_path: Path) -> None:
    with testing.spawned(tmp_path, "--faults", "500=1,resources=pods,seed=42") as server:
        assert server.process.stdout is not None
        assert server.process.stdout.readline().startswith("kubeconfig: ")
        assert server.process.stdout.readline().strip() == "faults: 500=1,resources=pods,seed=42"
        auth = {"Authorization": f"Bearer {server.token}"}
        pods = f"{server.url}/api/v1/namespaces/default/pods"
        assert requests.get(pods, headers=auth, timeout=10).status_code == 500
        url = server.url + control.PATH
        changed = requests.put(url, data="off", headers=auth, timeout=10)
        assert changed.json()["spec"] == "seed=42"
        assert requests.get(pods, headers=auth, timeout=10).status_code == 200
        server.process.terminate()
        _, err = server.process.communicate(timeout=30)
    assert server.process.returncode == 0
    (line,) = [x for x in err.splitlines() if x.startswith("faults injected: ")]
    report = json.loads(line.removeprefix("faults injected: "))
    assert report["injected"] == {"500": 1}
    assert report["seed"] == 42
