"""Invariants of ``diagnose``: it never raises on malformed objects and is deterministic.

Objects come from an API server we do not control (another version, a hand edit, a broken
component); the doctor must still answer. Each example takes a domain with problems and
replaces random parts of random objects with arbitrary JSON.
"""

from __future__ import annotations

import copy
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain.api import names
from computedomain.cli.doctor import diagnosis, report
from computedomain.cli.doctor.snapshot import Snapshot
from tests.unit.cli import doctor_objects as o
from tests.unit.cli.test_doctor_diagnosis import CASES

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _mangle(obj: Any, data: st.DataObject, depth: int = 0) -> Any:
    """Replace one randomly chosen subtree of ``obj`` with arbitrary JSON."""
    if not isinstance(obj, (dict, list)) or not obj or depth > 6:
        return data.draw(json_values)
    if data.draw(st.integers(0, 3)) == 0:
        return data.draw(json_values)
    keys = list(obj.keys()) if isinstance(obj, dict) else list(range(len(obj)))
    key = data.draw(st.sampled_from(keys))
    obj[key] = _mangle(obj[key], data, depth + 1)
    return obj


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), data=st.data(), rounds=st.integers(1, 6))
def test_diagnose_never_raises_and_is_deterministic(
    case: Any, data: st.DataObject, rounds: int
) -> None:
    world = o.healthy()
    case.breaks(world)
    lists = {k: copy.deepcopy(v) for k, v in attrs.asdict(world).items()}
    for _ in range(rounds):
        field = data.draw(st.sampled_from(sorted(k for k, v in lists.items() if v)))
        position = data.draw(st.integers(0, len(lists[field]) - 1))
        lists[field][position] = _mangle(lists[field][position], data)
    lists = {k: [x for x in v if isinstance(x, dict)] for k, v in lists.items()}
    snapshot = Snapshot(**lists)
    first = diagnosis.diagnose(snapshot)
    assert first == diagnosis.diagnose(Snapshot(**copy.deepcopy(lists)))
    reports = report.build(diagnosis.examine(snapshot))
    report.render_text(reports)
    report.render_json(reports)


@pytest.mark.parametrize("value", [[None], {"a": 1}, 7, None])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_label_value_that_is_not_a_string_is_ignored(case: Any, value: Any) -> None:
    """Found by the property above: a node whose domain label held a list was hashed."""
    world = o.healthy()
    case.breaks(world)
    lists = {k: copy.deepcopy(v) for k, v in attrs.asdict(world).items()}
    for node in lists["nodes"]:
        node.setdefault("metadata", {}).setdefault("labels", {})[names.COMPUTE_DOMAIN_LABEL] = value
    reports = report.build(diagnosis.examine(Snapshot(**lists)))
    report.render_text(reports)
