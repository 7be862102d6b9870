"""Bearer-token authentication: static tokens and bound ServiceAccount tokens."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from computedomain_sim.apiserver.authn import Authenticator, UserInfo

KEY = b"k" * 32
T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return claims


def test_static_token_users_are_authenticated() -> None:
    authn = Authenticator(
        static_tokens={"admin-token": UserInfo("admin", groups=("system:masters",))}
    )
    authn.add_static_token("dev-token", UserInfo("dev", uid="1"))
    assert authn.authenticate("admin-token") == UserInfo(
        "admin", groups=("system:masters", "system:authenticated")
    )
    assert authn.authenticate("dev-token") == UserInfo(
        "dev", uid="1", groups=("system:authenticated",)
    )
    assert authn.authenticate("nope") is None
    with pytest.raises(ValueError, match="must not be empty"):
        authn.add_static_token("", UserInfo("x"))


def test_service_account_token_claims_are_kubernetes_shaped() -> None:
    authn = Authenticator(signing_key=KEY, clock=Clock(T0))
    token, expires = authn.issue_service_account_token("ns", "sa", "uid-1", expiration_seconds=600)
    assert expires == T0 + timedelta(seconds=600)
    claims = _claims(token)
    assert claims["sub"] == "system:serviceaccount:ns:sa"
    assert claims["iss"] == "https://kubernetes.default.svc.cluster.local"
    assert claims["aud"] == ["https://kubernetes.default.svc.cluster.local"]
    assert (claims["iat"], claims["nbf"], claims["exp"]) == (
        int(T0.timestamp()),
        int(T0.timestamp()),
        int(expires.timestamp()),
    )
    assert claims["kubernetes.io"] == {
        "namespace": "ns",
        "serviceaccount": {"name": "sa", "uid": "uid-1"},
    }
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"alg": "HS256", "typ": "JWT"}


def test_service_account_user() -> None:
    authn = Authenticator(signing_key=KEY, clock=Clock(T0))
    token, _ = authn.issue_service_account_token(
        "ns", "sa", "uid-1", pod=("p", "pu"), node=("n1", "nu")
    )
    user = authn.authenticate(token)
    assert user is not None
    assert (user.name, user.uid) == ("system:serviceaccount:ns:sa", "uid-1")
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:ns",
        "system:authenticated",
    )
    assert user.extra_value("authentication.kubernetes.io/node-name") == ("n1",)
    assert user.extra_value("authentication.kubernetes.io/pod-uid") == ("pu",)
    assert user.extra_value("authentication.kubernetes.io/credential-id")[0].startswith("JTI=")


def test_a_restarted_server_with_the_same_key_accepts_old_tokens() -> None:
    token, _ = Authenticator(signing_key=KEY, clock=Clock(T0)).issue_service_account_token(
        "ns", "sa", "u"
    )
    assert Authenticator(signing_key=KEY, clock=Clock(T0)).authenticate(token) is not None
    assert Authenticator(signing_key=b"x" * 32, clock=Clock(T0)).authenticate(token) is None


def test_random_key_is_exposed_for_persistence() -> None:
    first = Authenticator()
    token, _ = first.issue_service_account_token("ns", "sa", "u")
    assert Authenticator(signing_key=first.signing_key).authenticate(token) is not None


@pytest.mark.parametrize(
    ("offset", "valid"),
    [
        (timedelta(0), True),
        (timedelta(seconds=599), True),
        (timedelta(seconds=600), False),
        (timedelta(seconds=-1), False),
    ],
    ids=["at-issue", "just-before-expiry", "at-expiry", "before-nbf"],
)
def test_token_lifetime(offset: timedelta, valid: bool) -> None:
    clock = Clock(T0)
    authn = Authenticator(signing_key=KEY, clock=clock)
    token, _ = authn.issue_service_account_token("ns", "sa", "u", expiration_seconds=600)
    clock.now = T0 + offset
    assert (authn.authenticate(token) is not None) is valid


def test_audience_must_match_the_server() -> None:
    authn = Authenticator(signing_key=KEY, clock=Clock(T0), api_audiences=("api",))
    ours, _ = authn.issue_service_account_token("ns", "sa", "u")
    theirs, _ = authn.issue_service_account_token("ns", "sa", "u", audiences=("vault",))
    assert authn.authenticate(ours) is not None
    assert authn.authenticate(theirs) is None


def test_sa_lookup_rejects_deleted_or_recreated_accounts() -> None:
    accounts = {("ns", "sa"): "uid-1"}
    authn = Authenticator(
        signing_key=KEY, clock=Clock(T0), sa_lookup=lambda ns, name: accounts.get((ns, name))
    )
    token, _ = authn.issue_service_account_token("ns", "sa", "uid-1")
    assert authn.authenticate(token) is not None
    accounts[("ns", "sa")] = "uid-2"
    assert authn.authenticate(token) is None
    del accounts[("ns", "sa")]
    assert authn.authenticate(token) is None


def _replace_payload(token: str, change: dict[str, Any]) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims.update(change)
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: _replace_payload(t, {"sub": "system:serviceaccount:kube-system:admin"}),
        lambda t: _replace_payload(t, {"exp": 4102444800}),
        lambda t: t[:-2] + ("AA" if not t.endswith("AA") else "BB"),
        lambda t: t.replace(".", "", 1),
        lambda t: "a.b.c",
        lambda t: "",
        lambda t: t + ".x",
        lambda t: "eyJhbGciOiJub25lIn0." + t.split(".")[1] + ".",
    ],
    ids=[
        "forged-subject",
        "forged-expiry",
        "bad-signature",
        "two-parts",
        "garbage",
        "empty",
        "four-parts",
        "alg-none",
    ],
)
def test_tampered_tokens_are_rejected(mangle: Any) -> None:
    authn = Authenticator(signing_key=KEY, clock=Clock(T0))
    token, _ = authn.issue_service_account_token("ns", "sa", "u")
    assert authn.authenticate(mangle(token)) is None


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (("", "sa", "u"), {}, "needs a namespace and a name"),
        (("ns", "sa", "u"), {"expiration_seconds": 0}, "must be positive"),
    ],
    ids=["empty-namespace", "zero-lifetime"],
)
def test_issue_rejects_bad_requests(
    args: tuple[str, str, str], kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        Authenticator(signing_key=KEY).issue_service_account_token(*args, **kwargs)


def test_short_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        Authenticator(signing_key=b"short")
