"""User impersonation (``Impersonate-User``, ``-Group``, ``-Uid``, ``-Extra-<key>`` headers), as
kube-apiserver's impersonation filter does it.

``kubectl --as``/``--as-group``, helm's ``--kube-as-user`` and client-go's ``ImpersonationConfig``
send these headers; a server that ignored them would run the request as the caller (usually an
admin) and answer ``kubectl auth can-i ... --as=<account>`` for the wrong user. Each thing asked
for is authorized first with the ``impersonate`` verb (``users``, ``groups``, ``serviceaccounts``
in the account's namespace, ``uids`` and ``userextras/<key>`` in ``authentication.k8s.io``);
the first denial is a 403 worded as kube-apiserver words it. Called by the pipeline right after
authentication; pure apart from asking the authorizer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final
from urllib.parse import unquote

import attrs
from multidict import CIMultiDictProxy

from .authn import AUTHENTICATED, SA_PREFIX, SERVICE_ACCOUNTS, UserInfo
from .rbac import RequestAttributes

USER_HEADER: Final = "Impersonate-User"
GROUP_HEADER: Final = "Impersonate-Group"
UID_HEADER: Final = "Impersonate-Uid"
EXTRA_PREFIX: Final = "impersonate-extra-"
_PREFIX: Final = "impersonate-"
AUTHN_GROUP: Final = "authentication.k8s.io"
ANONYMOUS: Final = "system:anonymous"
UNAUTHENTICATED: Final = "system:unauthenticated"

# (attributes to authorize) -> None when allowed, else the 403 message.
Check = Callable[[RequestAttributes], "str | None"]


class ImpersonationError(Exception):
    """A request that cannot be impersonated: ``status`` is 403 (denied) or 500 (malformed, as
    kube-apiserver answers groups or extras asked for without a user)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a ``system:serviceaccount:<ns>:<name>`` user name, else None."""
    if not username.startswith(SA_PREFIX):
        return None
    namespace, sep, name = username[len(SA_PREFIX) :].partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return namespace, name


def _asked(headers: CIMultiDictProxy[str], requestor: UserInfo) -> list[RequestAttributes]:
    """One ``impersonate`` check per user, group, uid and extra value the headers ask for."""
    checks: list[RequestAttributes] = []
    username = headers.get(USER_HEADER, "")

    def ask(
        resource: str, name: str, *, namespace: str = "", api_group: str = "", sub: str = ""
    ) -> None:
        checks.append(
            RequestAttributes(
                user=requestor,
                verb="impersonate",
                api_group=api_group,
                resource=resource,
                subresource=sub,
                name=name,
                namespace=namespace,
            )
        )

    if username:
        account = _service_account(username)
        if account is not None:
            ask("serviceaccounts", account[1], namespace=account[0])
        else:
            ask("users", username)
    for group in headers.getall(GROUP_HEADER, []):
        ask("groups", group)
    for key in sorted({k for k in headers if k.lower().startswith(EXTRA_PREFIX)}):
        extra_key = unquote(key[len(EXTRA_PREFIX) :]).lower()
        for value in headers.getall(key):
            ask("userextras", value, api_group=AUTHN_GROUP, sub=extra_key)
    uid = headers.get(UID_HEADER, "")
    if uid:
        ask("uids", uid, api_group=AUTHN_GROUP)
    if checks and not username:
        msg = "requested impersonation of groups, a uid or extras without impersonating a user"
        raise ImpersonationError(500, msg)
    return checks


def _groups(username: str, asked: tuple[str, ...]) -> tuple[str, ...]:
    """The impersonated user's groups: the ones asked for (a service account's fixed groups when
    none are), plus ``system:authenticated`` (or ``system:unauthenticated`` for anonymous)
    unless one of the two is already there."""
    groups = list(asked)
    account = _service_account(username)
    if not groups and account is not None:
        groups = [SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{account[0]}"]
    if AUTHENTICATED in groups or UNAUTHENTICATED in groups:
        return tuple(groups)
    return (*groups, UNAUTHENTICATED if username == ANONYMOUS else AUTHENTICATED)


def impersonate(requestor: UserInfo, headers: CIMultiDictProxy[str], check: Check) -> UserInfo:
    """The user a request runs as: ``requestor`` without impersonation headers, else the user
    they name once ``check`` allowed every part. Raises :class:`ImpersonationError`."""
    if not any(key[:1] in "Ii" and key[: len(_PREFIX)].lower() == _PREFIX for key in headers):
        return requestor  # the common case, decided in one pass over the names
    checks = _asked(headers, requestor)
    if not checks:
        return requestor
    for attributes in checks:
        denial = check(attributes)
        if denial is not None:
            raise ImpersonationError(403, denial)
    username = headers[USER_HEADER]
    extra: dict[str, list[str]] = {}
    for attributes in checks:
        if attributes.resource == "userextras":
            extra.setdefault(attributes.subresource, []).append(attributes.name)
    return attrs.evolve(
        requestor,
        name=username,
        uid=headers.get(UID_HEADER, ""),
        groups=_groups(username, tuple(headers.getall(GROUP_HEADER, []))),
        extra=tuple((key, tuple(values)) for key, values in sorted(extra.items())),
    )
