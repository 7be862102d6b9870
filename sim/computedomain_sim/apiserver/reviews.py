"""Review resources that are computed, never stored: ``SelfSubjectAccessReview`` and
``SubjectAccessReview`` (``kubectl auth can-i``), ``SelfSubjectRulesReview`` (``kubectl auth
can-i --list``) and ``SelfSubjectReview`` (``kubectl auth whoami``).

Called by :mod:`.rest` for POSTs to these resources; answers with the request object plus a
``status`` computed by the RBAC authorizer (everything is allowed on a server without RBAC).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import authn, fieldsets, managedfields, rbac, status, wire
from .registry import ResourceType
from .state import ApiState

REVIEW_GROUPS = ("authorization.k8s.io", "authentication.k8s.io")


def _user_json(user: authn.UserInfo | None) -> dict[str, Any]:
    if user is None:
        return {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    out: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        out["uid"] = user.uid
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra}
    return out


def _subject(spec: dict[str, Any]) -> authn.UserInfo:
    extra = spec.get("extra") or {}
    return authn.UserInfo(
        name=str(spec.get("user", "")),
        uid=str(spec.get("uid", "")),
        groups=tuple(str(g) for g in spec.get("groups") or ()),
        extra=tuple((str(k), tuple(v)) for k, v in extra.items() if isinstance(v, list)),
    )


def _decide(state: ApiState, user: authn.UserInfo | None, spec: dict[str, Any]) -> dict[str, Any]:
    if state.authorizer is None or user is None:
        return {"allowed": True, "reason": "the server authorizes every request"}
    res = spec.get("resourceAttributes")
    non = spec.get("nonResourceAttributes")
    if isinstance(res, dict):
        attrs = rbac.RequestAttributes(
            user=user,
            verb=str(res.get("verb", "")),
            api_group=str(res.get("group", "")),
            resource=str(res.get("resource", "")),
            subresource=str(res.get("subresource", "")),
            name=str(res.get("name", "")),
            namespace=str(res.get("namespace", "")),
            resource_request=True,
        )
    elif isinstance(non, dict):
        attrs = rbac.RequestAttributes(
            user=user,
            verb=str(non.get("verb", "")),
            path=str(non.get("path", "")),
            resource_request=False,
        )
    else:
        raise status.invalid(
            "SubjectAccessReview",
            "authorization.k8s.io",
            "",
            [status.required("spec.resourceAttributes")],
        )
    decision = state.authorizer.authorize(attrs)
    out: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason and not (user.groups and rbac.MASTERS in user.groups):
        out["reason"] = decision.reason  # kube-apiserver gives none for system:masters
    return out


def _rules(state: ApiState, user: authn.UserInfo | None, spec: dict[str, Any]) -> dict[str, Any]:
    """What ``user`` may do in ``spec.namespace`` (``kubectl auth can-i --list``)."""
    if state.authorizer is None or user is None:
        granted = list(rbac.EVERYTHING)
    else:
        granted = state.authorizer.rules_for(user, str(spec.get("namespace") or ""))
    resource_rules, path_rules = [], []
    for rule in granted:
        verbs = sorted(rule.verbs)
        if rule.non_resource_urls:
            path_rules.append({"verbs": verbs, "nonResourceURLs": list(rule.non_resource_urls)})
            continue
        entry: dict[str, Any] = {"verbs": verbs, "apiGroups": sorted(rule.api_groups),
                                 "resources": sorted(rule.resources)}  # fmt: skip
        if rule.resource_names:
            entry["resourceNames"] = sorted(rule.resource_names)
        resource_rules.append(entry)
    return {"resourceRules": resource_rules, "nonResourceRules": path_rules, "incomplete": False}


def _managed(state: ApiState, rt: ResourceType, spec: dict[str, Any], manager: str) -> Any:
    """The managedFields kube-apiserver puts on the answer, as for any create: the request's
    manager owns the spec it sent (the attributes, pointers in the Go type, themselves too)."""
    fields = fieldsets.of_value({"spec": spec}, fieldsets.BuiltinShape())
    for key, sub in (fields.get("f:spec") or {}).items():
        if key in ("f:resourceAttributes", "f:nonResourceAttributes") and sub:
            sub[fieldsets.SELF] = {}
    if not fields:
        return None
    who = managedfields.Manager(manager, managedfields.UPDATE, rt.group_version)
    return [managedfields.new_entry(who, fields, state.clock())]


def handle(
    state: ApiState,
    rt: ResourceType,
    user: authn.UserInfo | None,
    body: dict[str, Any],
    manager: str = "",
) -> web.Response:
    """The answer to a POST of a review ``body`` by ``manager`` (the request's)."""
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    meta: dict[str, Any] = {"creationTimestamp": None}
    managed = _managed(state, rt, spec, manager) if manager else None
    if managed:
        meta["managedFields"] = managed
    base = {"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta}
    if rt.kind == "SelfSubjectReview":
        return wire.json_response({**base, "status": {"userInfo": _user_json(user)}}, 201)
    if rt.kind == "SelfSubjectRulesReview":
        return wire.json_response({**base, "spec": spec, "status": _rules(state, user, spec)}, 201)
    who = user if rt.kind == "SelfSubjectAccessReview" else _subject(spec)
    return wire.json_response({**base, "spec": spec, "status": _decide(state, who, spec)}, 201)
