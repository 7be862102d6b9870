"""kube-apiserver's audit log of the service accounts' requests, read as RBAC usage: what
``sim up --rbac-usage`` records on the real control plane, where the decisions are the real
authorizer's.

:func:`write_policy` writes the audit policy :mod:`.kube` hands the API server (``Metadata``
level for service accounts outside ``kube-system``, nothing for anyone else). Each event then
carries the authorizer's decision and reason (the ``authorization.k8s.io/decision`` and
``authorization.k8s.io/reason`` annotations). :func:`read` parses the log into
:class:`AuditedRequest` s, one per request, and :func:`uses` turns them into the embedded
server's :class:`~computedomain_sim.apiserver.rbac_usage.Use` records, so that one test reads
both control planes alike.

The real authorizer names the role that allowed a request (``RBAC: allowed by ClusterRoleBinding
"b" of ClusterRole "r" to ...``), not the rule: :func:`uses` attributes the request to the first
rule of that role that grants it (as the authorizer visits them), given the roles' rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from computedomain.runtime import files
from computedomain_sim.apiserver.rbac_rules import Rule
from computedomain_sim.apiserver.rbac_usage import Use

__all__ = ["AuditedRequest", "read", "role_of", "uses", "write_policy"]

DECISION = "authorization.k8s.io/decision"
REASON = "authorization.k8s.io/reason"
POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    # One event when the response is complete (and one when a watch's starts), none on receipt.
    "omitStages": ["RequestReceived"],
    "rules": [
        # kube-controller-manager's controllers run as service accounts of kube-system.
        {"level": "None", "userGroups": ["system:serviceaccounts:kube-system"]},
        {"level": "Metadata", "userGroups": ["system:serviceaccounts"]},
        {"level": "None"},
    ],
}
_BINDING = re.compile(
    r'^RBAC: allowed by (?P<kind>ClusterRoleBinding|RoleBinding) "(?P<binding>[^"]*)" '
    r'of (?P<role_kind>ClusterRole|Role) "(?P<role>[^"]*)"'
)


def write_policy(path: Path) -> None:
    """The audit policy file for ``--audit-policy-file`` (written atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.atomic_write(path, yaml.safe_dump(POLICY, sort_keys=False).encode())


@attrs.frozen
class AuditedRequest:
    """One request as the audit log tells it: who, what, and the authorizer's verdict."""

    user: str
    verb: str
    group: str
    resource: str  # "" for a non-resource request
    subresource: str
    name: str
    namespace: str
    path: str  # the request URI without its query
    allowed: bool
    reason: str
    user_agent: str = ""
    code: int = 0  # the response's status code (0: not known)

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> AuditedRequest:
        """Raises KeyError/TypeError/AttributeError on an event that is not an audit Event."""
        ref = event.get("objectRef") or {}
        annotations = event.get("annotations") or {}
        return cls(
            user=str(event["user"]["username"]),
            verb=str(event["verb"]),
            group=str(ref.get("apiGroup") or ""),
            resource=str(ref.get("resource") or ""),
            subresource=str(ref.get("subresource") or ""),
            name=str(ref.get("name") or ""),
            namespace=str(ref.get("namespace") or ""),
            path=str(event.get("requestURI") or "").split("?", 1)[0],
            allowed=annotations.get(DECISION) == "allow",
            reason=str(annotations.get(REASON) or ""),
            user_agent=str(event.get("userAgent") or ""),
            code=int((event.get("responseStatus") or {}).get("code") or 0),
        )


def read(path: Path, offset: int = 0) -> Iterator[AuditedRequest]:
    """The requests logged in ``path`` from byte ``offset`` on, each once (a watch's start and
    end share an audit ID; lines that are not audit events, or cut short by a concurrent write,
    are skipped). None before the API server has logged a first event (no file yet)."""
    seen: set[str] = set()
    try:
        with path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return
    for line in text.splitlines():
        try:
            event = json.loads(line)
            audit_id = str(event["auditID"])
            if audit_id in seen:
                continue
            request = AuditedRequest.from_event(event)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        seen.add(audit_id)
        yield request


def role_of(reason: str) -> str | None:
    """The role an RBAC reason names, as the embedded server keys it (``ClusterRole/<name>``,
    ``Role/<namespace>/<name>``); None for a denial or another authorizer's reason."""
    match = _BINDING.match(reason)
    if match is None:
        return None
    if match["role_kind"] == "ClusterRole":
        return f"ClusterRole/{match['role']}"
    # A Role is bound by a RoleBinding of its namespace, named "<binding>/<namespace>".
    namespace = match["binding"].rpartition("/")[2]
    return f"Role/{namespace}/{match['role']}"


def _rule_index(request: AuditedRequest, rules: Sequence[Rule]) -> int:
    for index, rule in enumerate(rules):
        if request.resource:
            granted = rule.allows_resource(
                request.verb, request.group, request.resource, request.subresource, request.name
            )
        else:
            granted = rule.allows_path(request.verb, request.path)
        if granted:
            return index
    return -1


def uses(
    requests: Iterable[AuditedRequest], roles: Mapping[str, Sequence[Mapping[str, Any]]]
) -> Iterator[Use]:
    """The requests as :class:`Use` records: ``rule`` is None when the authorizer denied the
    request, else (the role its reason names, the index of that role's first rule in ``roles``
    granting it; -1 when ``roles`` lacks the role or no rule of it matches). Each distinct
    record once."""
    compiled = {key: [Rule.from_json(r) for r in rules] for key, rules in roles.items()}
    seen: set[Use] = set()
    for request in requests:
        rule: tuple[str, int] | None = None
        if request.allowed:
            role = role_of(request.reason) or request.reason
            rule = (role, _rule_index(request, compiled.get(role, ())))
        resource = request.resource or request.path
        if request.resource and request.subresource:
            resource = f"{request.resource}/{request.subresource}"
        use = Use(request.user, request.verb, request.group, resource, request.namespace, rule)
        if use not in seen:
            seen.add(use)
            yield use
