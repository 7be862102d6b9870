"""Values that become paths or names are checked before use."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.api import validation
from computedomain.api.errors import ConfigError


@pytest.mark.parametrize(
    "value",
    ["", ".", "..", "../x", "a/b", "a\x00b", "-lead", ".hidden", "x" * 254, "a b"],
    ids=["empty", "dot", "dotdot", "traversal", "slash", "nul", "dash", "hidden", "long", "space"],
)
def test_unsafe_components_are_rejected(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        validation.safe_path_component("domainID", value)
    assert info.value.field == "domainID"


@given(st.text())
def test_accepted_components_never_escape_a_directory(value: str) -> None:
    try:
        validation.safe_path_component("f", value)
    except ConfigError:
        return
    assert "/" not in value
    assert "\x00" not in value
    assert value not in (".", "..")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("6c1e8b8e-8a53-4a5e-9b2c-1f0c3b2a9d11.7", True),
        ("6c1e8b8e-8a53-4a5e-9b2c-1f0c3b2a9d11", False),
        ("x.1", False),
        ("../../etc.1", False),
    ],
    ids=["empty", "valid", "no-clique-number", "short", "traversal"],
)
def test_clique_ids(value: str, ok: bool) -> None:
    if ok:
        assert validation.clique_id("CLIQUE_ID", value) == value
    else:
        with pytest.raises(ConfigError):
            validation.clique_id("CLIQUE_ID", value)


@pytest.mark.parametrize(
    "value",
    [
        "0e5f3b36-7c21-4a53-9b8e-6a2f1c0d4e55.\u0661",  # a non-ASCII digit is not a digit here
        "0e5f3b36-7c21-4a53-9b8e-6a2f1c0d4e55.12345678901",  # more than 10 digits
        "0e5f3b36-7c21-4a53-9b8e-6a2f1c0d4e5.1",  # 35 characters before the dot
        "0e5f3b36-7c21-4a53-9b8e-6a2f1c0d4e55.1\n",
    ],
)
def test_near_clique_ids_are_refused(value: str) -> None:
    assert not validation.is_clique_id(value)
