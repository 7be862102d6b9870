"""Glue between the request pipeline and authentication/authorization (:mod:`.authn`,
:mod:`.rbac`).

:func:`build` creates the authenticator (with the admin token, a ``system:masters`` user) and,
when RBAC is on, the RBAC authorizer over the stored RBAC objects (recompiled after every RBAC
write, through a store listener). :func:`authenticate` / :func:`authorize` are what the
pipeline stages call. Without the authn/rbac modules the server runs open (every request
allowed), which is also the behaviour with ``rbac=False``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from multidict import CIMultiDictProxy

from . import authn, impersonation, status
from . import rbac as rbac_mod
from .requestinfo import RequestInfo
from .state import ApiState
from .store import Event

RBAC_GROUP = "rbac.authorization.k8s.io"
ADMIN_USER = "admin"
MASTERS = "system:masters"
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"


def _signing_key(data_dir: Path | None) -> bytes | None:
    """The token signing key, persisted beside the data so tokens survive a restart."""
    if data_dir is None:
        return None
    path = data_dir / "signing.key"
    if path.exists():
        key = path.read_bytes()
        if len(key) >= 16:
            return key
    key = secrets.token_bytes(32)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)
    return key


def build(state: ApiState, *, admin_token: str, rbac: bool, data_dir: Path | None) -> None:
    """Install the authenticator and (with ``rbac``) the authorizer on ``state``."""

    def sa_lookup(namespace: str, name: str) -> str | None:
        entry = state.store.get(("", "serviceaccounts"), f"{namespace}/{name}")
        return None if entry is None else entry.uid

    state.authenticator = authn.Authenticator(
        signing_key=_signing_key(data_dir), sa_lookup=sa_lookup
    )
    state.authenticator.add_static_token(
        admin_token, authn.UserInfo(name=ADMIN_USER, uid="admin", groups=(MASTERS,))
    )
    if not rbac:
        return

    def lister(group: str, plural: str) -> list[dict[str, Any]]:
        store = state.store
        out = []
        for key in store.keys((group, plural)):
            entry = store.get((group, plural), key)
            if entry is not None:
                out.append(entry.decode())
        return out

    authorizer = rbac_mod.RBACAuthorizer(lister, track_changes=False)

    def on_event(ev: Event) -> None:
        if ev.skey[0] == RBAC_GROUP:
            authorizer.invalidate()

    state.store.listeners.append(on_event)
    state.authorizer = authorizer
    state.config.require_auth = True


def authenticate(state: ApiState, header: str) -> authn.UserInfo | None:
    """The user of a request (None when the server runs without authentication)."""
    if state.authenticator is None:
        return None
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if not token:
        if state.config.require_auth:
            raise status.unauthorized()
        return authn.UserInfo(name=ANONYMOUS, groups=(UNAUTHENTICATED,))
    user = state.authenticator.authenticate(token)
    if user is None:
        raise status.unauthorized()
    return user


def impersonate(
    state: ApiState, user: authn.UserInfo | None, headers: CIMultiDictProxy[str]
) -> authn.UserInfo | None:
    """The user the request runs as after its ``Impersonate-*`` headers, each part allowed by
    the authorizer (every part is allowed without one, as under kube's AlwaysAllow)."""
    if user is None:
        return None
    authorizer = state.authorizer

    def check(attrs: rbac_mod.RequestAttributes) -> str | None:
        if authorizer is None:
            return None
        decision = authorizer.authorize(attrs)
        return None if decision.allowed else authorizer.forbidden_message(attrs, decision.reason)

    try:
        return impersonation.impersonate(user, headers, check)
    except impersonation.ImpersonationError as exc:
        if exc.status == 403:
            raise status.forbidden(exc.message) from exc
        raise status.internal_error(exc.message) from exc


def authorize(state: ApiState, user: authn.UserInfo | None, info: RequestInfo) -> None:
    """Raise 403 unless the authorizer allows the request (no-op without one)."""
    if state.authorizer is None or user is None:
        return
    attrs = rbac_mod.RequestAttributes(
        user=user,
        verb=info.verb,
        api_group=info.group,
        resource=info.resource,
        subresource=info.subresource,
        name=info.name,
        namespace=info.namespace,
        resource_request=info.is_resource,
        path=info.path,
    )
    decision = state.authorizer.authorize(attrs)
    if not decision.allowed:
        raise status.forbidden(
            state.authorizer.forbidden_message(attrs, decision.reason),
            resource=info.resource,
            group=info.group,
            name=info.name,
        )
