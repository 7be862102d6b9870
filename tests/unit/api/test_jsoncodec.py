"""The wire's JSON codec gives the standard library's values, except where kube-apiserver
differs from it too (big integers decode as floats; NaN and overflowing numbers are refused)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.api import jsoncodec

INT64 = st.integers(-(2**63), 2**64 - 1)
scalars = (
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
documents = st.recursive(
    scalars, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=40
)


def same(a: Any, b: Any) -> bool:
    """Equal, with types (1 is not 1.0 here) and the sign of zero."""
    return json.dumps(a) == json.dumps(b)


@given(documents)
def test_encoding_reads_back_as_the_standard_librarys_encoding(value: Any) -> None:
    ours = jsoncodec.dumps(value)
    theirs = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    assert same(json.loads(ours), json.loads(theirs))


def test_encoding_is_compact_utf8() -> None:
    assert (
        jsoncodec.dumps({"a": [1, "b c", "é"], "d": None})
        == '{"a":[1,"b c","é"],"d":null}'.encode()
    )


@given(documents)
def test_decoding_gives_the_standard_librarys_values(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=1, ensure_ascii=False)):
        assert same(jsoncodec.loads(text), json.loads(text))
        assert same(jsoncodec.loads(text.encode()), json.loads(text))


@given(documents)
def test_a_copy_is_equal_and_shares_nothing(value: Any) -> None:
    copied = jsoncodec.copy(value)
    assert same(copied, value)
    if isinstance(value, dict | list) and value:
        assert copied is not value


def test_integers_beyond_64_bits() -> None:
    big = 2**70
    assert jsoncodec.loads(str(big)) == float(big)  # as kube-apiserver decodes custom resources
    assert json.loads(jsoncodec.dumps({"n": big})) == {"n": big}  # encoded exactly
    assert jsoncodec.copy({"n": [big]}) == {"n": [big]}  # and copied exactly


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": 1e400}', "overflows"),
        ('{"a": ', "Expecting value"),
        ("[1, 2,]", "Expecting value"),
        (b"\xff", "can't decode"),
    ],
)
def test_what_is_not_json_is_refused_with_a_value_error(document: str | bytes, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        jsoncodec.loads(document)


def test_what_only_the_standard_library_reads_is_still_read() -> None:
    assert jsoncodec.loads('"\\ud800"') == "\ud800"  # a lone surrogate: orjson refuses it
    assert jsoncodec.loads(bytearray(b"[1]")) == [1]
    assert jsoncodec.loads(memoryview(b"[2]")) == [2]


def test_what_only_the_standard_library_writes_is_still_written() -> None:
    assert jsoncodec.dumps({1: "a"}) == b'{"1":"a"}'  # a key that is not a string


def test_a_non_finite_float_is_written_as_null() -> None:
    assert jsoncodec.dumps([math.nan, math.inf]) == b"[null,null]"
    assert jsoncodec.copy({"x": -math.inf}) == {"x": None}
