"""The conformance corpus, each case a test: on the embedded control plane (``make test``) its
normalised result must be the one kube-apiserver gave (``golden.json``), or, for a case the
corpus lists as refused, the stated refusal; on the real control plane (``make test-kube``)
kube-apiserver must still give the golden result, so the file cannot rot. With
``--conformance-record`` the kube run writes the golden file instead
(``make conformance-record``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from . import corpus, table
from .cases import Case
from .runner import Runner, refusal_seen

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("conformance"), pytest.mark.timeout(300)]

GOLDEN = corpus.golden()


def show(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True)


@pytest.mark.parametrize("case", corpus.CASES, ids=lambda c: c.name)
def test_case(
    case: Case, runner: Runner, recording: dict[str, Any] | None, control_plane: str
) -> None:
    if recording is not None:
        recording[case.name] = runner.run(case)
        return
    expected = GOLDEN.get(case.name)
    assert expected is not None, f"{case.name} has no golden result: run `make conformance-record`"
    refused = case.refused
    if control_plane == "embedded" and refused is not None:
        got = runner.run(case, stop_at=refused.step)
        assert got[: refused.step] == expected[: refused.step], show(got)
        assert refusal_seen(got[refused.step], refused.code, refused.message), (
            f"expected the refusal {refused.code} {refused.message!r}, got:\n"
            + show(got[refused.step])
        )
        return
    got = runner.run(case)
    for index, (mine, theirs) in enumerate(zip(got, expected, strict=False)):
        assert mine == theirs, (
            f"step {index} of {case.name} differs\n"
            f"--- got\n{show(mine)}\n--- golden\n{show(theirs)}"
        )
    assert len(got) == len(expected)


def test_the_docs_table_is_current() -> None:
    assert table.DOC.read_text() == table.render(), (
        "docs/conformance.md is stale: run `python -m tests.conformance.table`"
    )
