"""Micro-benchmark of the CRD schema engine on ComputeDomains: what one write costs the server.

Run: ``python bench/schema.py [iterations]``; prints one JSON document with µs per operation:
compile (once per CRD version), create (prune + default + validate, no old object: the CEL
transition rule is skipped), update (prune + default + validate against the old object: the
``self == oldSelf`` rule runs), and a status update with 8 nodes (list-map keys checked). The
schema is the CRD in ``deployments/base/crds``.
"""

from __future__ import annotations

import copy
import json
import pathlib
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import yaml

from computedomain_sim.apiserver.schema import StructuralSchema

ROOT = pathlib.Path(__file__).resolve().parents[1]
CRD = ROOT / "deployments" / "base" / "crds" / "resource.nvidia.com_computedomains.yaml"


def _openapi() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _cd(name: str = "imex-channel-0") -> dict[str, Any]:
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "cd", "namespace": "default", "uid": "u", "resourceVersion": "1"},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": name}}},
    }


def _per_call_us(fn: Callable[[], object], iterations: int) -> float:
    fn()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter() - start) / iterations)
    return round(best * 1e6, 2)


def main() -> int:
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    raw = _openapi()
    schema = StructuralSchema.compile(raw)

    def admit(body: dict[str, Any], old: dict[str, Any] | None) -> None:
        obj = schema.default(schema.prune(body))
        causes = schema.validate(obj, old)
        assert not causes, causes

    stored = schema.default(schema.prune(_cd()))
    with_status = copy.deepcopy(stored)
    with_status["status"] = {
        "status": "Ready",
        "nodes": [
            {"name": f"node-{i}", "ipAddress": f"10.0.0.{i}", "cliqueID": "c.0", "index": i}
            for i in range(8)
        ],
    }
    results = {
        "compile_us": _per_call_us(
            lambda: StructuralSchema.compile(raw), max(iterations // 50, 10)
        ),
        "create_us": _per_call_us(lambda: admit(_cd(), None), iterations),
        "update_us": _per_call_us(lambda: admit(_cd(), stored), iterations),
        "status_update_8_nodes_us": _per_call_us(lambda: admit(with_status, stored), iterations),
    }
    create_s = results["create_us"] / 1e6
    print(
        json.dumps(
            {
                "benchmark": "schema",
                "crd": str(CRD.relative_to(ROOT)),
                "iterations": iterations,
                "python": platform.python_version(),
                **results,
                "creates_per_core_per_s_schema_only": round(1 / create_s),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
