"""Label and field selector parsing and matching (apimachinery semantics and wording)."""

from __future__ import annotations

import pytest

from computedomain_sim.apiserver.selectors import (
    SelectorError,
    field_value,
    parse_fields,
    parse_labels,
)

LABELS = {"app": "web", "tier": "front", "version": "3"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db)", True),
        ("missing notin (db)", True),
        ("app notin (web)", False),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("version>2", True),
        ("version<3", False),
        ("app=web,tier=front", True),
        ("app=web, tier=back", False),
        ("  app = web  ", True),
        ("empty=", False),
        ("tier in (front,)", True),
    ],
    ids=str,
)
def test_label_matching(selector: str, expected: bool) -> None:
    assert parse_labels(selector).matches(LABELS) is expected


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("app=web tier=front", "found 'tier', expected: ',' or 'end of string'"),
        ("app in ()", "for 'in', 'notin' operators, values set can't be empty"),
        ("app in web", "found 'web', expected: '('"),
        ("=web", "found '=', expected: !, identifier, or 'end of string'"),
        ("app=web,", "found '', expected: identifier after ','"),
        ("-bad=x", "key: Invalid value"),
        ("version>x", "must be an integer"),
    ],
    ids=str,
)
def test_label_errors(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        parse_labels(selector)
    assert message in str(exc.value)


def test_field_selectors() -> None:
    sel = parse_fields("spec.nodeName=n1,metadata.name!=x")
    values = {"spec.nodeName": "n1", "metadata.name": "y"}
    assert sel.matches(lambda f: values.get(f, ""))
    assert not sel.matches(lambda f: {"spec.nodeName": "n2"}.get(f, ""))
    assert sel.exact("spec.nodeName") == "n1"
    assert parse_fields("a==b").terms == (("a", "=", "b"),)
    assert parse_fields(r"a=b\,c").terms == (("a", "=", "b,c"),)
    with pytest.raises(SelectorError, match="can't understand"):
        parse_fields("nonsense")


def test_field_value_forms() -> None:
    obj = {"spec": {"hostNetwork": True, "n": 3, "s": "x", "m": {"a": 1}}}
    assert field_value(obj, "spec.hostNetwork") == "true"
    assert field_value(obj, "spec.n") == "3"
    assert field_value(obj, "spec.s") == "x"
    assert field_value(obj, "spec.m") == ""
    assert field_value(obj, "spec.missing.deeper") == ""
