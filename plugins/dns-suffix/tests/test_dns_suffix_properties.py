"""Hypothesis properties of ``suffix``: names are distinct, valid DNS names, under the suffix.

Validity is checked here against RFC 1123 host-name rules written out independently of the
policy's own validator; and any text the validator accepts must give valid names.
"""

from __future__ import annotations

import re

from computedomain_dns_suffix import MAX_INDEX, SuffixDnsNames
from computedomain_dns_suffix.policy import validate_suffix
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain.api import names
from computedomain.policies import ConfigError

SETTINGS = settings(max_examples=100, deadline=None)
HOST_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")

labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)
suffixes = st.lists(labels, min_size=1, max_size=5).map(".".join)
indices = st.integers(min_value=0, max_value=MAX_INDEX)


def is_dns_name(name: str) -> bool:
    return len(name) <= 253 and all(HOST_LABEL.match(label) for label in name.split("."))


@SETTINGS
@given(suffixes, st.sets(indices, min_size=1, max_size=40))
def test_names_are_distinct_valid_and_under_the_suffix(suffix: str, chosen: set[int]) -> None:
    policy = SuffixDnsNames(suffix)
    result = {i: policy.dns_name(i) for i in chosen}
    assert len(set(result.values())) == len(result)
    for i, name in result.items():
        assert is_dns_name(name), name
        assert name == f"{names.dns_name(i)}.{suffix}"


@SETTINGS
@given(suffixes)
def test_the_first_names_are_distinct(suffix: str) -> None:
    policy = SuffixDnsNames(suffix)
    assert len({policy.dns_name(i) for i in range(64)}) == 64


def accepted(text: str) -> bool:
    try:
        validate_suffix(text)
    except ConfigError:
        return False
    return True


@SETTINGS
@given(st.text(alphabet=st.sampled_from("abcXYZ019-._ .") | st.characters(), max_size=260))
def test_every_accepted_suffix_gives_valid_names(text: str) -> None:
    if accepted(text):
        policy = SuffixDnsNames(text)
        assert is_dns_name(policy.dns_name(0))
        assert is_dns_name(policy.dns_name(MAX_INDEX))


@SETTINGS
@given(suffixes)
def test_generated_subdomains_are_accepted(suffix: str) -> None:
    assert accepted(suffix) == (len(suffix) <= 224)
