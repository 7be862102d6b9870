"""``$(VAR)`` expansion as the kubelet does it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain_sim.kubelet.expansion import expand

VARS = {"A": "1", "POD_IP": "127.4.0.2"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)", "1"),
        ("$(POD_IP):8080", "127.4.0.2:8080"),
        ("x$(A)y$(A)", "x1y1"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$A", "$A"),
        ("cost $", "cost $"),
        ("$(A", "$(A"),
    ],
    ids=[
        "whole",
        "prefix",
        "twice",
        "undefined kept",
        "escaped",
        "dollar",
        "bare",
        "trailing",
        "unclosed",
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert expand(text, VARS) == expected


@given(st.text(alphabet=st.characters(blacklist_characters="$")))
def test_text_without_dollar_is_unchanged(text: str) -> None:
    assert expand(text, VARS) == text
