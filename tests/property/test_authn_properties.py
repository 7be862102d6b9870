"""ServiceAccount tokens: round trip, and no single-character change survives verification."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain_sim.apiserver.authn import Authenticator

T0 = datetime(2026, 1, 1, tzinfo=UTC)
AUTHN = Authenticator(signing_key=b"s" * 32, clock=lambda: T0)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=20)


def _decoded(token: str) -> list[bytes]:
    return [base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)) for p in token.split(".")]


@settings(max_examples=100, deadline=None)
@given(namespace=names, name=names, uid=st.uuids().map(str), lifetime=st.integers(1, 10**6))
def test_issued_tokens_authenticate_as_their_service_account(
    namespace: str, name: str, uid: str, lifetime: int
) -> None:
    token, _ = AUTHN.issue_service_account_token(namespace, name, uid, expiration_seconds=lifetime)
    user = AUTHN.authenticate(token)
    assert user is not None
    assert (user.name, user.uid) == (f"system:serviceaccount:{namespace}:{name}", uid)
    assert f"system:serviceaccounts:{namespace}" in user.groups


@settings(max_examples=200, deadline=None)
@given(data=st.data(), namespace=names, name=names)
def test_tampered_tokens_are_rejected(data: st.DataObject, namespace: str, name: str) -> None:
    token, _ = AUTHN.issue_service_account_token(namespace, name, "uid")
    position = data.draw(st.integers(0, len(token) - 1))
    replacement = data.draw(st.sampled_from("AbQz09-_.").filter(lambda c: c != token[position]))
    tampered = token[:position] + replacement + token[position + 1 :]
    user = AUTHN.authenticate(tampered)
    if user is not None:
        # Only a change in base64 padding bits can leave the decoded token identical.
        assert tampered.count(".") == 2
        assert _decoded(tampered) == _decoded(token)
