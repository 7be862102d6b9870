"""Server-side printing helpers: ages as kubectl shows them, printer-column JSONPaths."""

from __future__ import annotations

import pytest

from computedomain_sim.apiserver.tables import human_duration, json_path


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (150, "2m30s"),
     (600, "10m"), (3 * 3600 + 5 * 60, "3h5m"), (9 * 3600, "9h"), (50 * 3600, "2d2h"),
     (10 * 86400, "10d"), (800 * 86400, "2y70d"), (3000 * 86400, "8y")],
    ids=str,
)  # fmt: skip
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_json_path() -> None:
    obj = {"spec": {"items": [{"n": 1}, {"n": 2}]}, "status": {"ok": True}}
    assert json_path(obj, ".status.ok") is True
    assert json_path(obj, ".spec.items[1].n") == 2
    assert json_path(obj, ".spec.items[*].n") == [1, 2]
    assert json_path(obj, "{.spec.missing}") is None
