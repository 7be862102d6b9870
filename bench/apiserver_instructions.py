"""Instructions the embedded API server executes per get, update and patch of a ComputeDomain;
prints one JSON document.

The CPU times of ``bench/apiserver.py`` move by a tenth between two runs on a small shared
machine, more than a change to the write path does; the number of instructions the server
executes for the same requests does not. The server runs under valgrind's callgrind with
counting off; counting is switched on (``callgrind_control``) only while each kind of request
is sent, after a warm-up, so start-up and the client are not counted. Under callgrind the
server runs some fifty times slower: the figure is a count, not a time.

Needs valgrind; without it the document says so and nothing is measured. To compare two
trees, run this file from each with the other's ``sim`` and package first on ``PYTHONPATH``.

Usage: ``python bench/apiserver_instructions.py [--ops N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apiserver import GROUP, PLURAL, REPO, VERSION, api, computedomain, create_namespace

from computedomain_sim.apiserver import testing

_WARM_UP = 100
_OBJECTS = 20
_DUMP_DEADLINE_S = 120.0


def _requests(co: Any, ns: str) -> dict[str, Callable[[int, str], object]]:
    """One request of each kind, the ``j``-th of a run tagged ``tag``, over ``_OBJECTS`` objects."""

    def get(j: int, tag: str) -> object:
        return co.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, f"cd-{j % _OBJECTS}")

    def update(j: int, tag: str) -> object:
        name = f"cd-{j % _OBJECTS}"
        body = computedomain(name, note=f"{tag}{j}")
        return co.replace_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name, body)

    def patch(j: int, tag: str) -> object:
        body = {"metadata": {"annotations": {"p": f"{tag}{j}"}}}
        return co.patch_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, f"cd-{j % _OBJECTS}", body
        )

    return {"get": get, "update": update, "patch": patch}


def _control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def _dumped_total(directory: Path, label: str) -> int:
    """The instruction total of the dump named ``label`` (callgrind writes it asynchronously)."""
    deadline = time.monotonic() + _DUMP_DEADLINE_S
    while time.monotonic() < deadline:
        for path in directory.glob("callgrind.out.*"):
            text = path.read_text(errors="replace")
            if f"\ndesc: Trigger: dump {label}\n" not in text:
                continue
            for line in text.splitlines():
                if line.startswith("totals:"):
                    return int(line.split()[1])
        time.sleep(0.2)
    raise TimeoutError(f"callgrind wrote no dump named {label!r}")


def measure(ops: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        wrapper = (
            "valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={out}/callgrind.out.%p",
        )  # fmt: skip
        crds = str(REPO / "deployments" / "base" / "crds")
        with testing.spawned(out, "--crds", crds, wrapper=wrapper, timeout=300.0) as srv:
            pid = srv.process.pid
            ns = "bench-instructions"
            create_namespace(srv.url, srv.token, ns)
            co = api(srv.url, srv.token)
            for j in range(_OBJECTS):
                co.create_namespaced_custom_object(
                    GROUP, VERSION, ns, PLURAL, computedomain(f"cd-{j}")
                )
            per_op = {}
            for verb, request in _requests(co, ns).items():
                for j in range(_WARM_UP):
                    request(j, "warm")
                _control(pid, "--instr=on")
                for j in range(ops):
                    request(j, "run")
                _control(pid, "--instr=off")
                _control(pid, f"--dump={verb}")
                total = _dumped_total(out, verb)
                _control(pid, "--zero")
                per_op[verb] = round(total / ops / 1000)
    return {"thousand_instructions_per_request": per_op, "requests_each": ops}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=300)
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        result: dict[str, Any] = {"skipped": "valgrind (callgrind) is not installed"}
    else:
        result = {"python": sys.version.split()[0], **measure(args.ops)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
