"""The CEL engine: the Kubernetes cases it must get right, its errors, and DRA device selectors."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim import cel

SPEC = {
    "numNodes": 0,
    "channel": {"resourceClaimTemplate": {"name": "t"}, "allocationMode": "Single"},
}
EVAL = [
    ("equal nested objects", "self == oldSelf", {"self": SPEC, "oldSelf": SPEC}, True),
    (
        "unequal nested objects",
        "self == oldSelf",
        {"self": SPEC, "oldSelf": {**SPEC, "numNodes": 1}},
        False,
    ),
    (
        "equal lists",
        "self == oldSelf",
        {"self": [1, {"a": [None]}], "oldSelf": [1, {"a": [None]}]},
        True,
    ),
    (
        "dotted map key",
        "self.attributes['compute-domain.nvidia.com'].type == 'daemon'",
        {"self": {"attributes": {"compute-domain.nvidia.com": {"type": "daemon"}}}},
        True,
    ),
    ("JSON int is int", "type(self) == int", {"self": 3}, True),
    ("JSON float is double", "type(self) == double", {"self": 1.5}, True),
    ("int division truncates", "self / 2", {"self": 7}, 3),
    ("uint literal", "type(1u) == uint", {}, True),
    ("has present", "has(self.x)", {"self": {"x": 1}}, True),
    ("has absent", "has(self.y)", {"self": {"x": 1}}, False),
    ("all", "self.all(e, e > 0)", {"self": [1, 2]}, True),
    ("exists", "self.exists(e, e > 1)", {"self": [1, 2]}, True),
    ("exists_one", "self.exists_one(e, e > 0)", {"self": [1, 2]}, False),
    ("map", "self.map(e, e * 2)", {"self": [1, 2]}, [2, 4]),
    ("filter", "self.filter(e, e > 1)", {"self": [1, 2]}, [2]),
    ("macros over map keys", "self.all(k, k.startsWith('a'))", {"self": {"ab": 1, "ac": 2}}, True),
    (
        "string functions",
        "self.startsWith('ab') && self.endsWith('c') && self.contains('b')",
        {"self": "abc"},
        True,
    ),
    ("strings extension", "self.lowerAscii().split('-') == ['a', 'b']", {"self": "A-B"}, True),
    ("size counts code points", "size(self)", {"self": "héllo"}, 5),
    (
        "size of list and map",
        "size(self.l) + self.m.size()",
        {"self": {"l": [1, 2], "m": {"a": 1}}},
        3,
    ),
    ("matches is RE2 search", "self.matches('b+')", {"self": "abbc"}, True),
    ("in map", "'a' in self", {"self": {"a": 1}}, True),
    ("optional field", "self.?x.orValue(5)", {"self": {}}, 5),
    ("null", "self.x == null", {"self": {"x": None}}, True),
]


@pytest.mark.parametrize(
    ("expr", "activation", "expected"), [c[1:] for c in EVAL], ids=[c[0] for c in EVAL]
)
def test_evaluation(expr: str, activation: dict[str, Any], expected: Any) -> None:
    program = cel.compile_expression(expr, variables=["self", "oldSelf"])
    result = program.evaluate(activation)
    assert result == expected
    assert type(result) is type(expected)


RUNTIME_ERRORS = [
    ("missing key", "self.y == 1", {"self": {"x": 1}}, "no such key: y"),
    ("no such overload", "self.s + 1", {"self": {"s": "a"}}, "no such overload"),
    ("index out of range", "self[3]", {"self": [1]}, "index out of bounds: 3"),
    ("overflow", "self + 1", {"self": 2**63 - 1}, "integer overflow"),
    ("division by zero", "self / 0", {"self": 1}, "division by zero"),
    (
        "variable missing from activation",
        "self",
        {},
        'No value with name "self" found in Activation',
    ),
]


@pytest.mark.parametrize(
    ("expr", "activation", "detail"),
    [c[1:] for c in RUNTIME_ERRORS],
    ids=[c[0] for c in RUNTIME_ERRORS],
)
def test_runtime_errors_are_worded_like_cel_go(
    expr: str, activation: dict[str, Any], detail: str
) -> None:
    program = cel.compile_expression(expr, variables=["self"])
    with pytest.raises(cel.CelEvaluationError) as info:
        program.evaluate(activation)
    assert info.value.detail == detail
    assert expr in str(info.value)


COMPILE_ERRORS = [
    ("syntax", "self.x ==", "ERROR: <input>:1:10: Syntax error"),
    ("undeclared variable", "other > 1", "ERROR: <input>:1:1: undeclared reference to 'other'"),
    ("undeclared function", "frob(self)", "undeclared reference to 'frob'"),
    (
        "impossible overload",
        "1 + 'a'",
        "found no matching overload for '_+_' applied to '(int, string)'",
    ),
    ("mixed numeric equality", "1 == 1.0", "found no matching overload for '_==_'"),
    ("empty", "  ", "expression is empty"),
]


@pytest.mark.parametrize(
    ("expr", "detail"), [c[1:] for c in COMPILE_ERRORS], ids=[c[0] for c in COMPILE_ERRORS]
)
def test_compile_errors_name_expression_and_position(expr: str, detail: str) -> None:
    with pytest.raises(cel.CelError) as info:
        cel.compile_expression(expr, variables=["self"])
    assert detail in info.value.detail
    assert repr(expr) in str(info.value)


def test_compiled_programs_are_cached() -> None:
    first = cel.compile_expression("self > 1", variables=["self"])
    assert cel.compile_expression("self > 1", variables=("self",)) is first
    assert cel.compile_expression("self > 1", variables=["self", "oldSelf"]) is not first


DRIVER = "compute-domain.nvidia.com"
# DeviceClass selectors (docs/compatibility.md#devices-and-resourceslices).
DAEMON_CLASS = (
    "device.driver == 'compute-domain.nvidia.com' && "
    "device.attributes['compute-domain.nvidia.com'].type == 'daemon'"
)
CHANNEL_CLASS = (
    "device.driver == 'compute-domain.nvidia.com' && "
    "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
    "device.attributes['compute-domain.nvidia.com'].id == 0"
)
DAEMON = {"type": {"string": "daemon"}, "id": {"int": 0}}
CHANNEL_0 = {"type": {"string": "channel"}, "id": {"int": 0}}
CHANNEL_1 = {"type": {"string": "channel"}, "id": {"int": 1}}
SELECTORS = [
    ("daemon class selects daemon-0", DAEMON_CLASS, DRIVER, DAEMON, True),
    ("daemon class skips channel-0", DAEMON_CLASS, DRIVER, CHANNEL_0, False),
    ("channel class selects channel-0", CHANNEL_CLASS, DRIVER, CHANNEL_0, True),
    ("channel class skips channel-1", CHANNEL_CLASS, DRIVER, CHANNEL_1, False),
    ("channel class skips daemon-0", CHANNEL_CLASS, DRIVER, DAEMON, False),
    ("other driver", DAEMON_CLASS, "gpu.nvidia.com", {"type": {"string": "daemon"}}, False),
    (
        "missing attribute does not match",
        CHANNEL_CLASS,
        DRIVER,
        {"type": {"string": "channel"}},
        False,
    ),
    (
        "qualified attribute names",
        "device.attributes['compute-domain.nvidia.com'].type == 'daemon'",
        DRIVER,
        {"compute-domain.nvidia.com/type": {"string": "daemon"}},
        True,
    ),
    (
        "other domain",
        "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0'",
        DRIVER,
        {"resource.kubernetes.io/pcieRoot": {"string": "pci0"}},
        True,
    ),
    (
        "bool attribute",
        "device.attributes['compute-domain.nvidia.com'].healthy",
        DRIVER,
        {"healthy": {"bool": True}},
        True,
    ),
    (
        "version attribute as string",
        "device.attributes['compute-domain.nvidia.com'].driverVersion == '570.158.1'",
        DRIVER,
        {"driverVersion": {"version": "570.158.1"}},
        True,
    ),
    (
        "clique attribute",
        "device.attributes['compute-domain.nvidia.com'].cliqueID.startsWith('uuid.')",
        DRIVER,
        {"cliqueID": {"string": "uuid.1"}},
        True,
    ),
    (
        "non-bool result does not match",
        "device.attributes['compute-domain.nvidia.com'].id",
        DRIVER,
        {"id": {"int": 1}},
        False,
    ),
]


@pytest.mark.parametrize(
    ("expr", "driver", "attributes", "expected"),
    [c[1:] for c in SELECTORS],
    ids=[c[0] for c in SELECTORS],
)
def test_device_selectors(
    expr: str, driver: str, attributes: dict[str, Any], expected: bool
) -> None:
    assert (
        cel.evaluate_device_selector(expr, driver=driver, attributes=attributes, capacity={})
        is expected
    )


def test_device_capacity_and_multiple_allocations() -> None:
    selector = (
        "device.capacity['compute-domain.nvidia.com'].channels == '2048' && "
        "device.allowMultipleAllocations"
    )
    kwargs: dict[str, Any] = {
        "driver": DRIVER,
        "attributes": {},
        "capacity": {"channels": {"value": "2048"}},
    }
    assert cel.evaluate_device_selector(selector, allow_multiple_allocations=True, **kwargs)
    assert not cel.evaluate_device_selector(selector, allow_multiple_allocations=False, **kwargs)
    assert not cel.evaluate_device_selector(selector, **kwargs), "absent field: error, no match"


@pytest.mark.parametrize(
    "expr",
    ["device.driver ==", "device.driver + 1", "'x'"],
    ids=["syntax", "overload", "string-result"],
)
def test_device_selector_compile_errors_raise(expr: str) -> None:
    with pytest.raises(cel.CelError):
        cel.evaluate_device_selector(expr, driver=DRIVER, attributes={}, capacity={})


def test_malformed_attribute_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="device attribute 'type' has none of string"):
        cel.evaluate_device_selector(
            DAEMON_CLASS, driver=DRIVER, attributes={"type": {"float": 1.0}}, capacity={}
        )
