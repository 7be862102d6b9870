"""Allocating claims from ResourceSlices with the DeviceClasses of deployments/ and the API
server's CEL engine."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from computedomain.api import names
from computedomain_sim.cluster import kustomize
from computedomain_sim.scheduler.allocation import (
    DeviceId,
    Unallocatable,
    allocate,
    allocated_devices,
)

DRIVER = names.DRIVER_NAME
DEPLOYMENTS = Path(__file__).parents[4] / "deployments"


@functools.cache
def classes() -> dict[str, dict[str, Any]]:
    objects = kustomize.render_builtin(DEPLOYMENTS / "base")
    out = {o["metadata"]["name"]: o for o in objects if o["kind"] == "DeviceClass"}
    # A class with a config, to see it copied into the allocation.
    out["with-config"] = {
        "metadata": {"name": "with-config"},
        "spec": {
            "selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}],
            "config": [{"opaque": {"driver": DRIVER, "parameters": {"from": "class"}}}],
        },
    }
    return out


def device(name: str, kind: str, ident: int, clique: str = "c.1") -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {
            "type": {"string": kind},
            "id": {"int": ident},
            f"{DRIVER}/cliqueID": {"string": clique},
        },
    }


def slice_(
    node: str, *devices: dict[str, Any], generation: int = 1, count: int = 1, suffix: str = ""
) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}-{DRIVER}{suffix}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
            "devices": list(devices),
        },
    }


def node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}}


SLICES = [
    slice_("n1", device("channel-0", "channel", 0), device("daemon-0", "daemon", 0)),
    slice_("n2", device("channel-0", "channel", 0), device("daemon-0", "daemon", 0, clique="c.2")),
]


def claim(*requests: dict[str, Any], config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if config:
        devices["config"] = config
    return {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": devices}}


def request(name: str, device_class: str, **exact: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": device_class, **exact}}


CHANNEL_CONFIG = {
    "requests": ["channel"],
    "opaque": {
        "driver": DRIVER,
        "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "ComputeDomainChannelConfig",
            "domainID": "uid-1",
            "allocationMode": "Single",
        },
    },
}


def test_workload_claim_gets_channel_zero_with_configs_and_node_selector() -> None:
    out = allocate(
        claim(request("channel", names.CHANNEL_DEVICE_CLASS), config=[CHANNEL_CONFIG]),
        node("n1"),
        SLICES,
        classes(),
        frozenset(),
    )
    assert out == {
        "devices": {
            "results": [
                {"request": "channel", "driver": DRIVER, "pool": "n1", "device": "channel-0"}
            ],
            "config": [{"source": "FromClaim", **CHANNEL_CONFIG}],
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
            ]
        },
    }


def test_daemon_class_selects_the_daemon_device() -> None:
    out = allocate(
        claim(request("daemon", names.DAEMON_DEVICE_CLASS)),
        node("n2"),
        SLICES,
        classes(),
        frozenset(),
    )
    assert isinstance(out, dict)
    assert out["devices"]["results"][0]["device"] == "daemon-0"
    assert out["devices"]["results"][0]["pool"] == "n2"


def test_class_config_comes_first_and_names_the_request() -> None:
    out = allocate(
        claim(
            request("r", "with-config"),
            config=[{"opaque": {"driver": DRIVER, "parameters": {"from": "claim"}}}],
        ),
        node("n1"),
        SLICES,
        classes(),
        frozenset(),
    )
    assert isinstance(out, dict)
    assert out["devices"]["config"] == [
        {
            "source": "FromClass",
            "requests": ["r"],
            "opaque": {"driver": DRIVER, "parameters": {"from": "class"}},
        },
        {"source": "FromClaim", "opaque": {"driver": DRIVER, "parameters": {"from": "claim"}}},
    ]


def test_a_device_is_never_given_twice() -> None:
    taken = frozenset({DeviceId(DRIVER, "n1", "channel-0")})
    out = allocate(
        claim(request("channel", names.CHANNEL_DEVICE_CLASS)), node("n1"), SLICES, classes(), taken
    )
    assert isinstance(out, Unallocatable)
    assert out.reason == "cannot allocate all claims"
    assert "0 of 1 device(s)" in out.detail


def test_request_selectors_narrow_the_class_by_clique() -> None:
    by_rack = request(
        "daemon",
        names.DAEMON_DEVICE_CLASS,
        selectors=[{"cel": {"expression": f"device.attributes['{DRIVER}'].cliqueID == 'c.2'"}}],
    )
    assert isinstance(
        allocate(claim(by_rack), node("n1"), SLICES, classes(), frozenset()), Unallocatable
    )
    assert isinstance(allocate(claim(by_rack), node("n2"), SLICES, classes(), frozenset()), dict)


@pytest.mark.parametrize(
    ("req", "count"),
    [({"count": 2}, 2), ({"allocationMode": "All"}, 2)],
    ids=["exact count", "all"],
)
def test_counts(req: dict[str, Any], count: int) -> None:
    wide = [slice_("n1", *(device(f"channel-{i}", "channel", i) for i in range(2)))]
    any_channel = {
        "metadata": {"name": "any"},
        "spec": {
            "selectors": [
                {"cel": {"expression": f"device.attributes['{DRIVER}'].type == 'channel'"}}
            ]
        },
    }
    out = allocate(
        claim(request("r", "any", **req)), node("n1"), wide, {"any": any_channel}, frozenset()
    )
    assert isinstance(out, dict)
    assert len(out["devices"]["results"]) == count
    too_many = allocate(
        claim(request("r", "any", count=3)), node("n1"), wide, {"any": any_channel}, frozenset()
    )
    assert isinstance(too_many, Unallocatable)


def test_devices_of_other_nodes_are_invisible() -> None:
    only_n2 = [SLICES[1]]
    assert isinstance(
        allocate(
            claim(request("channel", names.CHANNEL_DEVICE_CLASS)),
            node("n1"),
            only_n2,
            classes(),
            frozenset(),
        ),
        Unallocatable,
    )


def test_only_the_newest_complete_generation_counts() -> None:
    old = slice_("n1", device("channel-0", "channel", 0), generation=1)
    new = slice_("n1", device("channel-9", "channel", 0), generation=2)
    out = allocate(
        claim(request("channel", names.CHANNEL_DEVICE_CLASS)),
        node("n1"),
        [old, new],
        classes(),
        frozenset(),
    )
    assert isinstance(out, dict)
    assert out["devices"]["results"][0]["device"] == "channel-9"
    incomplete = slice_("n1", device("channel-0", "channel", 0), generation=3, count=2)
    assert isinstance(
        allocate(
            claim(request("channel", names.CHANNEL_DEVICE_CLASS)),
            node("n1"),
            [old, incomplete],
            classes(),
            frozenset(),
        ),
        Unallocatable,
    )


def test_all_nodes_and_node_selector_slices() -> None:
    shared = {
        "metadata": {"name": "net"},
        "spec": {
            "driver": DRIVER,
            "allNodes": True,
            "pool": {"name": "net", "generation": 1, "resourceSliceCount": 1},
            "devices": [device("channel-0", "channel", 0)],
        },
    }
    out = allocate(
        claim(request("channel", names.CHANNEL_DEVICE_CLASS)),
        node("n9"),
        [shared],
        classes(),
        frozenset(),
    )
    assert isinstance(out, dict)
    assert "nodeSelector" not in out
    rack = {
        **shared,
        "spec": {
            **shared["spec"],
            "allNodes": False,
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
                ]
            },
        },
    }
    assert isinstance(
        allocate(
            claim(request("channel", names.CHANNEL_DEVICE_CLASS)),
            node("n9"),
            [rack],
            classes(),
            frozenset(),
        ),
        Unallocatable,
    )
    inside = allocate(
        claim(request("channel", names.CHANNEL_DEVICE_CLASS)),
        node("n9", {"rack": "r1"}),
        [rack],
        classes(),
        frozenset(),
    )
    assert isinstance(inside, dict)
    assert inside["nodeSelector"] == rack["spec"]["nodeSelector"]


@pytest.mark.parametrize(
    ("spec", "detail"),
    [
        ({"requests": [request("r", "nope")]}, "no DeviceClass 'nope'"),
        ({"requests": [{"name": "r", "firstAvailable": [{}]}]}, "firstAvailable not supported"),
        (
            {
                "requests": [request("r", names.CHANNEL_DEVICE_CLASS)],
                "constraints": [{"matchAttribute": "x"}],
            },
            "constraints are not supported",
        ),
        (
            {
                "requests": [
                    request(
                        "r",
                        names.CHANNEL_DEVICE_CLASS,
                        selectors=[{"cel": {"expression": "device.driver +"}}],
                    )
                ]
            },
            "does not compile",
        ),
    ],
    ids=["unknown class", "firstAvailable", "constraints", "bad CEL"],
)
def test_unallocatable_claims_say_why(spec: dict[str, Any], detail: str) -> None:
    out = allocate({"spec": {"devices": spec}}, node("n1"), SLICES, classes(), frozenset())
    assert isinstance(out, Unallocatable)
    assert detail in out.detail


def test_v1beta1_claims_and_basic_devices() -> None:
    beta_slice = slice_("n1", {"name": "channel-0", "basic": device("channel-0", "channel", 0)})
    beta_claim = {
        "spec": {
            "devices": {
                "requests": [{"name": "channel", "deviceClassName": names.CHANNEL_DEVICE_CLASS}]
            }
        }
    }
    assert isinstance(allocate(beta_claim, node("n1"), [beta_slice], classes(), frozenset()), dict)


def test_allocated_devices_reads_claim_statuses() -> None:
    claims = [
        {
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {"driver": DRIVER, "pool": "n1", "device": "channel-0", "request": "r"}
                        ]
                    }
                }
            }
        },
        {},
    ]
    assert allocated_devices(claims) == {DeviceId(DRIVER, "n1", "channel-0")}
