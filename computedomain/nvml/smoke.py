"""``python -m computedomain.nvml.smoke``: what the real NVML backend sees on this machine.

Meant for a one-off check on a GPU host: prints exactly one JSON document with the driver
version, the DNS-names driver check, the device count, each GPU's fabric info and the clique ID
derived in strict and in legacy mode (or the error that would stop the plugin). Exit status 0
when NVML answered, 1 when it did not (the document then carries the error). ``--backend fake``
runs the same report against a fake profile.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from computedomain.api.errors import PermanentError
from computedomain.nvml import backends, clique, driverversion, fake
from computedomain.nvml.interface import BackendName, Nvml
from computedomain.nvml.types import FabricState, Gpu, NvmlError, return_name


def _gpu(gpu: Gpu) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "index": gpu.index,
        "name": gpu.name,
        "uuid": gpu.uuid,
        "fabricReturn": return_name(gpu.fabric_return),
    }
    if gpu.fabric is not None:
        info = gpu.fabric
        try:
            state = FabricState(info.state).name
        except ValueError:
            state = str(info.state)
        entry["fabric"] = {
            "clusterUuid": str(info.cluster_uuid),
            "cliqueId": info.clique_id,
            "state": state,
            "status": return_name(info.status),
            "healthMask": info.health_mask,
            "healthSummary": info.health_summary,
        }
    return entry


def _clique(gpus: Sequence[Gpu], *, strict: bool) -> dict[str, str]:
    try:
        return {"cliqueID": clique.discover(gpus, strict=strict)}
    except clique.CliqueError as exc:
        return {"error": str(exc)}


def report(nvml: Nvml) -> tuple[dict[str, Any], bool]:
    """The report document and whether NVML answered. Calls the backend; prints nothing."""
    doc: dict[str, Any] = {"backend": type(nvml).__name__}
    try:
        version = nvml.driver_version()
        doc["driverVersion"] = version
        try:
            driverversion.check_dns_names(version)
            doc["dnsNamesDriverCheck"] = "ok"
        except PermanentError as exc:
            doc["dnsNamesDriverCheck"] = str(exc)
        gpus = nvml.gpus()
    except NvmlError as exc:
        doc["error"] = str(exc)
        return doc, False
    doc["deviceCount"] = len(gpus)
    doc["gpus"] = [_gpu(g) for g in gpus]
    doc["strict"] = _clique(gpus, strict=True)
    doc["legacy"] = _clique(gpus, strict=False)
    return doc, True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m computedomain.nvml.smoke")
    parser.add_argument("--backend", default="real", help="real (default) or fake")
    parser.add_argument("--driver-root", default="/", help="where to look for libnvidia-ml")
    parser.add_argument("--fake-profile", default=fake.Profile.GB200.value)
    args = parser.parse_args(argv)
    try:
        nvml = backends.select(
            backends.parse_backend(args.backend, setting="--backend"),
            profile=fake.parse_profile(args.fake_profile, setting="--fake-profile"),
            driver_root=Path(args.driver_root),
        )
    except PermanentError as exc:
        print(json.dumps({"error": str(exc)}))
        return 1
    doc, ok = report(nvml)
    if isinstance(nvml, fake.FakeNvml):
        doc["backend"] = f"{BackendName.FAKE}:{nvml.profile}"
    print(json.dumps(doc, indent=2, sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
