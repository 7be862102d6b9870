"""The impersonated user and the checks that must pass first, computed from the headers alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from computedomain_sim.apiserver import impersonation
from computedomain_sim.apiserver.authn import UserInfo
from computedomain_sim.apiserver.rbac import RequestAttributes

ADMIN = UserInfo(name="admin", groups=("system:masters", "system:authenticated"))


def _headers(*pairs: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


def _allow_all(_: RequestAttributes) -> None:
    return None


def test_no_headers_keep_the_caller() -> None:
    assert impersonation.impersonate(ADMIN, _headers(), _allow_all) is ADMIN


def test_every_part_is_checked_with_the_impersonate_verb() -> None:
    seen: list[RequestAttributes] = []

    def check(attrs: RequestAttributes) -> None:
        seen.append(attrs)

    user = impersonation.impersonate(
        ADMIN,
        _headers(
            ("Impersonate-User", "system:serviceaccount:team:runner"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes%2Fa", "read"),
        ),
        check,
    )
    assert {
        (a.verb, a.api_group, a.resource, a.subresource, a.namespace, a.name) for a in seen
    } == {
        ("impersonate", "", "serviceaccounts", "", "team", "runner"),
        ("impersonate", "", "groups", "", "", "devs"),
        ("impersonate", "authentication.k8s.io", "uids", "", "", "u-1"),
        ("impersonate", "authentication.k8s.io", "userextras", "scopes/a", "", "read"),
    }
    assert all(a.user is ADMIN for a in seen)
    assert user.name == "system:serviceaccount:team:runner"
    assert user.uid == "u-1"
    assert user.groups == ("devs", "system:authenticated")
    assert user.extra == (("scopes/a", ("read",)),)


def test_the_first_denial_is_the_answer() -> None:
    def deny_groups(attrs: RequestAttributes) -> str | None:
        return "no groups" if attrs.resource == "groups" else None

    with pytest.raises(impersonation.ImpersonationError) as exc:
        impersonation.impersonate(
            ADMIN, _headers(("Impersonate-User", "a"), ("Impersonate-Group", "g")), deny_groups
        )
    assert (exc.value.status, exc.value.message) == (403, "no groups")


def test_anonymous_gets_the_unauthenticated_group() -> None:
    user = impersonation.impersonate(
        ADMIN, _headers(("Impersonate-User", "system:anonymous")), _allow_all
    )
    assert user.groups == ("system:unauthenticated",)


@given(
    name=st.text(min_size=1, max_size=20).filter(lambda s: s.isprintable()),
    groups=st.lists(st.sampled_from(["a", "b", "system:authenticated", "system:unauthenticated"])),
)
def test_exactly_the_asked_groups_plus_one_authentication_group(
    name: str, groups: list[str]
) -> None:
    headers = _headers(("Impersonate-User", name), *(("Impersonate-Group", g) for g in groups))
    user = impersonation.impersonate(ADMIN, headers, _allow_all)
    assert user.name == name
    assert set(groups) <= set(user.groups)
    assert {"system:authenticated", "system:unauthenticated"} & set(user.groups)
    added = [g for g in user.groups if g not in groups]
    assert len(added) <= 1
