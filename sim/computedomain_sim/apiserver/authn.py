"""Bearer-token authentication for the embedded API server: static tokens and self-verifying
ServiceAccount tokens.

The server's HTTP layer calls :meth:`Authenticator.authenticate` with the token of each request
and hands the :class:`UserInfo` to RBAC (:mod:`.rbac`); the TokenRequest handler
(``serviceaccounts/<name>/token``) calls :meth:`Authenticator.issue_service_account_token`.

ServiceAccount tokens are JWTs shaped like Kubernetes' bound tokens (``iss``, ``sub``
``system:serviceaccount:<ns>:<name>``, ``aud``, ``exp``, ``iat``, ``nbf``, ``jti`` and the
``kubernetes.io`` claim with namespace, service account and optional pod and node), signed with
HS256 under the server's key instead of RS256: nothing outside the server verifies them, and a
restarted server given the same key (persisted with its data) accepts the tokens it issued before.
Uses only the standard library (``hmac``, ``hashlib``, ``base64``, ``json``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import attrs

ISSUER: Final = "https://kubernetes.default.svc.cluster.local"
SA_PREFIX: Final = "system:serviceaccount:"
AUTHENTICATED: Final = "system:authenticated"
SERVICE_ACCOUNTS: Final = "system:serviceaccounts"
_HEADER: Final = {"alg": "HS256", "typ": "JWT"}
_EXTRA_PREFIX: Final = "authentication.kubernetes.io/"

SaLookup = Callable[[str, str], "str | None"]  # (namespace, name) -> current uid, or None


@attrs.frozen
class UserInfo:
    """An authenticated user, as Kubernetes' ``user.Info``."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    # e.g. ("authentication.kubernetes.io/node-name", ("node-1",)) for pod-bound SA tokens
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def extra_value(self, key: str) -> tuple[str, ...]:
        """The values of one ``extra`` key (empty when absent)."""
        return next((values for k, values in self.extra if k == key), ())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _ts(moment: datetime) -> int:
    return int(moment.timestamp())


class Authenticator:
    """Maps bearer tokens to users. Thread-compatible; tokens can be added at run time."""

    def __init__(
        self,
        *,
        signing_key: bytes | None = None,
        static_tokens: Mapping[str, UserInfo] | None = None,
        sa_lookup: SaLookup | None = None,
        api_audiences: Sequence[str] = (ISSUER,),
        issuer: str = ISSUER,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """``signing_key``: the HS256 key (a random one when ``None``; persist
        :attr:`signing_key` to keep tokens valid across restarts). ``sa_lookup``: called with
        (namespace, name) for every ServiceAccount token; returning ``None`` or another uid
        rejects it, as Kubernetes rejects tokens of deleted or recreated accounts."""
        if signing_key is not None and len(signing_key) < 16:
            msg = "signing_key must be at least 16 bytes"
            raise ValueError(msg)
        self.signing_key: bytes = signing_key or secrets.token_bytes(32)
        self._static: dict[str, UserInfo] = {}
        for token, user in (static_tokens or {}).items():
            self.add_static_token(token, user)
        self._sa_lookup = sa_lookup
        self._audiences = tuple(api_audiences)
        self._issuer = issuer
        self._clock = clock or (lambda: datetime.now(UTC))

    def add_static_token(self, token: str, user: UserInfo) -> None:
        """Accept ``token`` as ``user`` from now on (replacing any previous user of it).

        ``system:authenticated`` is added to the user's groups, as kube-apiserver adds it to
        every authenticated user.
        """
        if not token:
            msg = "a static token must not be empty"
            raise ValueError(msg)
        if AUTHENTICATED not in user.groups:
            user = attrs.evolve(user, groups=(*user.groups, AUTHENTICATED))
        self._static[token] = user

    def authenticate(self, token: str) -> UserInfo | None:
        """The user of ``token``, or ``None`` when it is unknown, tampered with, expired, not
        yet valid, for another audience, or its ServiceAccount is gone. Never raises."""
        user = self._static.get(token)
        if user is not None:
            return user
        claims = self._verify(token)
        if claims is None:
            return None
        return self._service_account_user(claims)

    def issue_service_account_token(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        expiration_seconds: int = 3600,
        audiences: Sequence[str] = (),
        now: datetime | None = None,
        pod: tuple[str, str] | None = None,
        node: tuple[str, str] | None = None,
    ) -> tuple[str, datetime]:
        """A bound ServiceAccount token and its expiry; pure apart from the random ``jti``.

        ``audiences`` defaults to the server's API audiences; ``pod`` and ``node`` are optional
        (name, uid) bindings, surfaced as the ``authentication.kubernetes.io/*`` user extras.
        Raises ``ValueError`` for an empty name or a non-positive lifetime.
        """
        if not namespace or not name:
            msg = "a service account token needs a namespace and a name"
            raise ValueError(msg)
        if expiration_seconds <= 0:
            msg = f"expiration_seconds must be positive, not {expiration_seconds}"
            raise ValueError(msg)
        issued = (now or self._clock()).astimezone(UTC).replace(microsecond=0)
        expires = issued + timedelta(seconds=expiration_seconds)
        k8s: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        }
        if pod is not None:
            k8s["pod"] = {"name": pod[0], "uid": pod[1]}
        if node is not None:
            k8s["node"] = {"name": node[0], "uid": node[1]}
        claims = {
            "aud": list(audiences or self._audiences),
            "exp": _ts(expires),
            "iat": _ts(issued),
            "iss": self._issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": k8s,
            "nbf": _ts(issued),
            "sub": f"{SA_PREFIX}{namespace}:{name}",
        }
        return self._sign(claims), expires

    def _sign(self, claims: Mapping[str, Any]) -> str:
        header = _b64(json.dumps(_HEADER, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
        signing_input = f"{header}.{payload}".encode("ascii")
        signature = hmac.new(self.signing_key, signing_input, hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}"

    def _verify(self, token: str) -> dict[str, Any] | None:
        """The claims of a well-signed, currently valid token for our audiences, else ``None``."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        header_b64, payload_b64, signature_b64 = parts
        try:
            signing_input = f"{header_b64}.{payload_b64}".encode("ascii")
            signature = _unb64(signature_b64)
            header = json.loads(_unb64(header_b64))
            claims = json.loads(_unb64(payload_b64))
        except (UnicodeError, ValueError, binascii.Error):
            return None
        expected = hmac.new(self.signing_key, signing_input, hashlib.sha256).digest()
        if not hmac.compare_digest(expected, signature):
            return None
        if not isinstance(header, dict) or header.get("alg") != "HS256":
            return None
        if not isinstance(claims, dict) or claims.get("iss") != self._issuer:
            return None
        now = _ts(self._clock())
        exp, nbf = claims.get("exp"), claims.get("nbf", 0)
        if not isinstance(exp, int) or not isinstance(nbf, int) or not nbf <= now < exp:
            return None
        audiences = claims.get("aud")
        if isinstance(audiences, str):
            audiences = [audiences]
        if not isinstance(audiences, list) or not set(audiences) & set(self._audiences):
            return None
        return claims

    def _service_account_user(self, claims: Mapping[str, Any]) -> UserInfo | None:
        k8s = claims.get("kubernetes.io")
        if not isinstance(k8s, dict):
            return None
        namespace = k8s.get("namespace")
        account = k8s.get("serviceaccount") or {}
        name, uid = account.get("name"), account.get("uid", "")
        if not isinstance(namespace, str) or not isinstance(name, str) or not isinstance(uid, str):
            return None
        if claims.get("sub") != f"{SA_PREFIX}{namespace}:{name}":
            return None
        if self._sa_lookup is not None and self._sa_lookup(namespace, name) != uid:
            return None
        extra: list[tuple[str, tuple[str, ...]]] = [
            (f"{_EXTRA_PREFIX}credential-id", (f"JTI={claims.get('jti', '')}",))
        ]
        for kind in ("node", "pod"):
            bound = k8s.get(kind)
            if isinstance(bound, dict):
                extra.append((f"{_EXTRA_PREFIX}{kind}-name", (str(bound.get("name", "")),)))
                extra.append((f"{_EXTRA_PREFIX}{kind}-uid", (str(bound.get("uid", "")),)))
        return UserInfo(
            name=f"{SA_PREFIX}{namespace}:{name}",
            uid=uid,
            groups=(SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED),
            extra=tuple(sorted(extra)),
        )
