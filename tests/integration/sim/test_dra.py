"""DRA end to end on the simulated cluster, with the TEST FIXTURE plugin (fake_dra_plugin.py):
the kubelet registers the plugin through the real handshake, the resourceclaim controller makes
the pod's claim from its template, the scheduler allocates it with CEL selectors, the kubelet
prepares it (retrying while the plugin refuses, with FailedPrepareDynamicResources events),
applies the CDI edits, and unprepares it when the pod goes; the claim then goes too."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from computedomain.kube.resources import (
    DAEMON_SETS,
    DEVICE_CLASSES,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from computedomain_sim.kubelet import isolation
from computedomain_sim.kubelet.launch import Isolation
from tests.support.clusters import running_cluster
from tests.support.polling import eventually

from .helpers import events_for, gone, log_of, namespace, pod, ready_pod

MODES = [Isolation.PATHMAP] + ([Isolation.MOUNTNS] if isolation.mountns_available()[0] else [])
DRIVER = "test.example.com"
KIND_IS_TEST = f"device.attributes['{DRIVER}'].kind == 'test'"
PLUGIN = Path(__file__).with_name("fake_dra_plugin.py")


def plugin_daemonset(ns: str, calls: Path) -> dict[str, Any]:
    env = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "KUBELET_REGISTRAR_DIRECTORY_PATH", "value": "/var/lib/kubelet/plugins_registry"},
        {"name": "KUBELET_PLUGINS_DIRECTORY_PATH", "value": "/var/lib/kubelet/plugins"},
        {"name": "CDI_ROOT", "value": "/var/run/cdi"},
        {"name": "CALLS_FILE", "value": str(calls)},
        {"name": "FAIL_PREPARES", "value": "2"},
        {"name": "PYTHONPATH", "value": str(Path(__file__).parents[3])},
    ]
    mounts = [
        ("registry", "/var/lib/kubelet/plugins_registry"),
        ("plugins", "/var/lib/kubelet/plugins"),
        ("cdi", "/var/run/cdi"),
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "fake-plugin", "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": "fake-plugin"}},
            "template": {
                "metadata": {"labels": {"app": "fake-plugin"}},
                "spec": {
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "plugin",
                            "image": "python",
                            "command": [sys.executable, str(PLUGIN)],
                            "env": env,
                            "volumeMounts": [{"name": n, "mountPath": p} for n, p in mounts],
                        }
                    ],
                    "volumes": [
                        {"name": n, "hostPath": {"path": p, "type": "DirectoryOrCreate"}}
                        for n, p in mounts
                    ],
                },
            },
        },
    }


def resource_slice(node: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "dev0", "attributes": {"kind": {"string": "test"}}}],
        },
    }


@pytest.mark.parametrize("mode", MODES)
async def test_claim_from_template_is_allocated_prepared_injected_and_released(
    tmp_path: Path, mode: Isolation
) -> None:
    calls = tmp_path / "calls.jsonl"
    async with running_cluster(tmp_path / "sim", nodes_per_rack=1, isolation=mode) as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "work")
        await api.create(DAEMON_SETS, plugin_daemonset(ns, calls))
        await api.create(RESOURCE_SLICES, resource_slice("r0n0"))
        await api.create(
            DEVICE_CLASSES,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
            },
        )
        await api.create(
            RESOURCE_CLAIM_TEMPLATES,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-dev", "namespace": ns},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "dev",
                                    "exactly": {
                                        "deviceClassName": DRIVER,
                                        "selectors": [{"cel": {"expression": KIND_IS_TEST}}],
                                    },
                                }
                            ]
                        }
                    }
                },
            },
        )
        await eventually(
            lambda: _registered(calls), what="the kubelet registered the fixture plugin"
        )
        script = (
            "import os, json, time\n"
            "dev = os.path.join(os.environ.get('CD_SIM_DEV_DIR', '/dev'), 'test-device0')\n"
            "share = os.environ.get('TEST_SHARE', '/test-share')\n"
            "print('claim', os.environ['TEST_CLAIM'])\n"
            "print('device', json.load(open(dev))['major'])\n"
            "time.sleep(600)\n"
        )
        workload = pod(
            "user",
            ns,
            script,
            resourceClaims=[{"name": "thing", "resourceClaimTemplateName": "one-dev"}],
            container={"resources": {"claims": [{"name": "thing"}]}},
        )
        await api.create(PODS, workload)
        running = await ready_pod(api, "user", ns, within=60)
        (claim_status,) = running["status"]["resourceClaimStatuses"]
        claim_name = claim_status["resourceClaimName"]
        assert claim_name.startswith("user-thing-")
        claim = await api.get(RESOURCE_CLAIMS, claim_name, ns)
        assert claim["status"]["allocation"]["devices"]["results"] == [
            {"request": "dev", "driver": DRIVER, "pool": "r0n0", "device": "dev0"}
        ]
        assert claim["status"]["reservedFor"][0]["uid"] == running["metadata"]["uid"]
        assert claim["metadata"]["ownerReferences"][0]["uid"] == running["metadata"]["uid"]
        events = [
            e
            for e in await events_for(api, ns, "user")
            if e["reason"] == "FailedPrepareDynamicResources"
        ]
        assert events
        assert "not yet: attempt 1" in events[0]["message"]

        async def output() -> str | None:
            log = log_of(cluster, running)
            return log if "device" in log else None

        log = await eventually(output, what="the workload's output")
        assert f"claim {claim_name}" in log
        assert "device 42" in log
        prepares = [c for c in _calls(calls) if c["call"] == "prepare"]
        assert len(prepares) == 3  # two refusals, then success

        await api.delete(PODS, "user", ns)
        await gone(api, PODS, "user", ns)
        assert [c for c in _calls(calls) if c["call"] == "unprepare"] == [
            {"call": "unprepare", "claims": [claim_name]}
        ]
        await gone(api, RESOURCE_CLAIMS, claim_name, ns)


async def _registered(calls: Path) -> bool:
    return any(
        c.get("call") == "NotifyRegistrationStatus" and c.get("registered") for c in _calls(calls)
    )


def _calls(calls: Path) -> list[dict[str, Any]]:
    if not calls.exists():
        return []
    return [json.loads(line) for line in calls.read_text().splitlines() if line.strip()]
