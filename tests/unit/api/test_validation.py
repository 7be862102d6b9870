"""Values that become paths or names are checked before use."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
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


_CLIQUE_PATTERN = re.compile(r"[0-9a-fA-F-]{36}\.[0-9]{1,10}")
_CLIQUE_LIKE = st.builds(
    "{}{}{}".format,
    st.text("0123456789abcdefABCDEF-gG.", min_size=34, max_size=38),
    st.sampled_from([".", "", "..", "-"]),
    st.text("0123456789.x\u0661", max_size=12),
)


@settings(max_examples=500)
@given(_CLIQUE_LIKE | st.text(max_size=50))
@example("0e5f3b36-7c21-4a53-9b8e-6a2f1c0d4e55.\u0661")  # a non-ASCII digit is not a digit here
@example("0e5f3b36-7c21-4a53-9b8e-6a2f1c0d4e55.12345678901")
def test_the_clique_id_check_is_the_documented_pattern(value: str) -> None:
    """The hand-written check (no ``re`` in the probe) accepts exactly what the pattern does."""
    assert validation.is_clique_id(value) is (_CLIQUE_PATTERN.fullmatch(value) is not None)
