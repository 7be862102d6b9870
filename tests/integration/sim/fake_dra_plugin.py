"""TEST FIXTURE: a tiny DRA kubelet plugin for testing the simulated kubelet's side only.

Not the project's plugin (that is ``cd-kubelet-plugin``); this one exists so the kubelet's
registration handshake, NodePrepare/NodeUnprepare calls, retries and CDI application can be
tested on their own. Run as a pod of the simulated cluster (``python fake_dra_plugin.py``), it
serves ``pluginregistration.Registration`` on
``$KUBELET_REGISTRAR_DIRECTORY_PATH/<driver>-reg.sock`` and the DRA v1 service on
``$KUBELET_PLUGINS_DIRECTORY_PATH/<driver>/dra.sock`` (built on ``computedomain.proto``), and on
prepare writes one CDI spec per claim into ``$CDI_ROOT`` with an env var, a device node and a
bind mount. ``FAIL_PREPARES=N`` makes the first N prepare calls fail with ``not yet: attempt
<n>`` (to see the kubelet retry); every call is appended to ``$CALLS_FILE`` as a JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from computedomain.proto import dra

DRIVER = os.environ.get("DRIVER_NAME", "test.example.com")
VENDOR = "k8s.test.example.com"


class Registration:
    async def GetInfo(self, request: Any, context: Any) -> Any:
        endpoint = os.path.join(os.environ["KUBELET_PLUGINS_DIRECTORY_PATH"], DRIVER, "dra.sock")
        return dra.registration_messages().PluginInfo(
            type=dra.PLUGIN_TYPE,
            name=DRIVER,
            endpoint=endpoint,
            supported_versions=["v1.DRAPlugin"],
        )

    async def NotifyRegistrationStatus(self, request: Any, context: Any) -> Any:
        record({"call": "NotifyRegistrationStatus", "registered": request.plugin_registered})
        return dra.registration_messages().RegistrationStatusResponse()


class Plugin:
    def __init__(self) -> None:
        self.failures_left = int(os.environ.get("FAIL_PREPARES", "0"))
        self.attempts = 0

    async def NodePrepareResources(self, request: Any, context: Any) -> Any:
        claims = dra.claims_from_wire(request.claims)
        self.attempts += 1
        record({"call": "prepare", "claims": [c.name for c in claims]})
        results: dict[str, dra.PrepareResult] = {}
        for claim in claims:
            if self.failures_left > 0:
                results[claim.uid] = dra.PrepareResult(error=f"not yet: attempt {self.attempts}")
                continue
            results[claim.uid] = dra.PrepareResult(devices=(write_spec(claim),))
        if self.failures_left > 0:
            self.failures_left -= 1
        return dra.prepare_response(dra.Version.V1, results)

    async def NodeUnprepareResources(self, request: Any, context: Any) -> Any:
        claims = dra.claims_from_wire(request.claims)
        record({"call": "unprepare", "claims": [c.name for c in claims]})
        remove_specs(claims)
        return dra.unprepare_response(dra.Version.V1, {c.uid: "" for c in claims})


def write_spec(claim: dra.ClaimRef) -> dra.Device:
    """One device per claim: env, a device node and a mount of a per-claim directory."""
    share = Path(os.environ["KUBELET_PLUGINS_DIRECTORY_PATH"], DRIVER, "claims", claim.uid)
    share.mkdir(parents=True, exist_ok=True)
    (share / "hello").write_text(f"claim {claim.name}\n")
    # The plugin directory is mounted at its host path, so this path is valid on the host too.
    host_share = str(share)
    name = f"{claim.uid}-dev0"
    spec = {
        "cdiVersion": "0.5.0",
        "kind": f"{VENDOR}/claim",
        "devices": [
            {
                "name": name,
                "containerEdits": {
                    "env": [f"TEST_CLAIM={claim.name}"],
                    "deviceNodes": [
                        {"path": "/dev/test-device0", "type": "c", "major": 42, "minor": 7}
                    ],
                    "mounts": [
                        {
                            "hostPath": host_share,
                            "containerPath": "/test-share",
                            "options": ["ro", "bind"],
                        }
                    ],
                },
            }
        ],
    }
    Path(os.environ["CDI_ROOT"], f"{VENDOR}-claim_{claim.uid}.json").write_text(json.dumps(spec))
    pool = os.environ["NODE_NAME"]
    return dra.Device(("dev",), pool, "dev0", (f"{VENDOR}/claim={name}",))


def remove_specs(claims: tuple[dra.ClaimRef, ...]) -> None:
    for claim in claims:
        Path(os.environ["CDI_ROOT"], f"{VENDOR}-claim_{claim.uid}.json").unlink(missing_ok=True)


def record(entry: dict[str, Any]) -> None:
    with open(os.environ["CALLS_FILE"], "a") as calls:
        calls.write(json.dumps(entry) + "\n")


async def main() -> None:
    registrar = os.environ["KUBELET_REGISTRAR_DIRECTORY_PATH"]
    plugin_dir = os.path.join(os.environ["KUBELET_PLUGINS_DIRECTORY_PATH"], DRIVER)
    os.makedirs(plugin_dir, exist_ok=True)
    dra_server = grpc.aio.server()
    dra.services(dra.Version.V1).add_DRAPluginServicer_to_server(Plugin(), dra_server)
    dra_server.add_insecure_port(f"unix://{plugin_dir}/dra.sock")
    await dra_server.start()
    reg_server = grpc.aio.server()
    dra.registration_services().add_RegistrationServicer_to_server(Registration(), reg_server)
    reg_server.add_insecure_port(f"unix://{registrar}/{DRIVER}-reg.sock")
    await reg_server.start()
    print(f"serving {DRIVER}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await reg_server.stop(0)
    await dra_server.stop(0)


if __name__ == "__main__":
    asyncio.run(main())
