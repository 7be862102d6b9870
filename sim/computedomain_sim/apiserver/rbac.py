"""RBAC authorization for the embedded API server, with the semantics and wording of
kube-apiserver's RBAC authorizer.

The HTTP layer builds :class:`RequestAttributes` for every request and asks
:meth:`RBACAuthorizer.authorize`; on a denial it answers 403 with
:meth:`RBACAuthorizer.forbidden_message`. Policy comes from the stored Roles, ClusterRoles,
RoleBindings and ClusterRoleBindings, read through the ``lister`` callback on every request and
compiled again only when their resourceVersions change (or after
:meth:`~RBACAuthorizer.invalidate`).
Rule matching and the built-in roles live in :mod:`.rbac_rules`.

Members of ``system:masters`` are always allowed. Every allowed request records the (role, rule
index) that granted it, so a test can list the rules no component used
(:meth:`~RBACAuthorizer.unused_rules`): least privilege, proven.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from computedomain_sim.apiserver.authn import SA_PREFIX, UserInfo
from computedomain_sim.apiserver.rbac_rules import BUILTIN_CLUSTER_ROLES, Rule, aggregated_rules

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
MASTERS: Final = "system:masters"
Lister = Callable[[str, str], Iterable[dict[str, Any]]]
_Subject = tuple[str, str]  # ("User", name) or ("Group", name)
# What a member of system:masters (or anyone, on a server without RBAC) may do.
EVERYTHING: Final = (
    Rule.from_json({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
    Rule.from_json({"verbs": ["*"], "nonResourceURLs": ["*"]}),
)
RuleKey = tuple[str, int]  # ("ClusterRole/<name>" or "Role/<ns>/<name>", rule index)


@attrs.frozen
class RequestAttributes:
    """What is being asked, as Kubernetes' ``authorizer.Attributes``."""

    user: UserInfo
    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    resource_request: bool = True
    path: str = ""


@attrs.frozen
class Decision:
    allowed: bool
    reason: str
    rule: RuleKey | None = None  # the stored or built-in rule that allowed the request


@attrs.frozen
class _Grant:
    rule_key: RuleKey
    rule: Rule
    via: str  # 'ClusterRoleBinding "x" of ClusterRole "y"'


@attrs.define
class _Policy:
    cluster: dict[_Subject, list[_Grant]] = attrs.field(factory=dict)
    namespaced: dict[str, dict[_Subject, list[_Grant]]] = attrs.field(factory=dict)
    # errors resolving bindings that apply to a subject (missing roles), cluster-wide / per ns
    cluster_errors: dict[_Subject, list[str]] = attrs.field(factory=dict)
    namespaced_errors: dict[str, dict[_Subject, list[str]]] = attrs.field(factory=dict)
    stored_rules: list[RuleKey] = attrs.field(factory=list)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _subjects(binding: Mapping[str, Any], namespace: str) -> list[tuple[_Subject, str]]:
    """The binding's subjects as match keys, with their description for reasons."""
    out: list[tuple[_Subject, str]] = []
    for subject in binding.get("subjects") or ():
        kind, name = subject.get("kind"), subject.get("name", "")
        if kind == "User":
            out.append((("User", name), f'User "{name}"'))
        elif kind == "Group":
            out.append((("Group", name), f'Group "{name}"'))
        elif kind == "ServiceAccount":
            ns = subject.get("namespace") or namespace
            out.append((("User", f"{SA_PREFIX}{ns}:{name}"), f'ServiceAccount "{name}/{ns}"'))
    return out


def _compile(lister: Lister) -> _Policy:
    policy = _Policy()
    cluster_roles = list(lister(RBAC_GROUP, "clusterroles"))
    roles: dict[tuple[str, str], list[Rule]] = {}
    role_rules: dict[str, list[Rule]] = {}
    for role in cluster_roles:
        name = _meta(role).get("name", "")
        compiled = [Rule.from_json(r) for r in aggregated_rules(role, cluster_roles)]
        role_rules[name] = compiled
        policy.stored_rules.extend((f"ClusterRole/{name}", i) for i in range(len(compiled)))
    for role in lister(RBAC_GROUP, "roles"):
        meta = _meta(role)
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        roles[ns, name] = [Rule.from_json(r) for r in role.get("rules") or ()]
        policy.stored_rules.extend((f"Role/{ns}/{name}", i) for i in range(len(roles[ns, name])))

    for name, (groups, builtin) in BUILTIN_CLUSTER_ROLES.items():
        via = f'ClusterRoleBinding "{name}" of ClusterRole "{name}"'
        for group in groups:
            grants = policy.cluster.setdefault(("Group", group), [])
            grants.extend(_Grant((f"ClusterRole/{name}", i), r, via) for i, r in enumerate(builtin))

    for binding in sorted(
        lister(RBAC_GROUP, "clusterrolebindings"), key=lambda b: _meta(b).get("name", "")
    ):
        ref = binding.get("roleRef") or {}
        role_name, binding_name = ref.get("name", ""), _meta(binding).get("name", "")
        rules: list[Rule] | None = (
            role_rules.get(role_name) if ref.get("kind") == "ClusterRole" else None
        )
        for subject, described in _subjects(binding, ""):
            if rules is None:
                error = f'clusterrole.rbac.authorization.k8s.io "{role_name}" not found'
                policy.cluster_errors.setdefault(subject, []).append(error)
                continue
            via = f'ClusterRoleBinding "{binding_name}" of ClusterRole "{role_name}" to {described}'
            grants = policy.cluster.setdefault(subject, [])
            grants.extend(
                _Grant((f"ClusterRole/{role_name}", i), r, via) for i, r in enumerate(rules)
            )

    bindings = sorted(
        lister(RBAC_GROUP, "rolebindings"),
        key=lambda b: (_meta(b).get("namespace", ""), _meta(b).get("name", "")),
    )
    for binding in bindings:
        meta, ref = _meta(binding), binding.get("roleRef") or {}
        ns, binding_name, role_name = (
            meta.get("namespace", ""),
            meta.get("name", ""),
            ref.get("name", ""),
        )
        if ref.get("kind") == "ClusterRole":
            rules, key, kind = role_rules.get(role_name), f"ClusterRole/{role_name}", "ClusterRole"
            missing = f'clusterrole.rbac.authorization.k8s.io "{role_name}" not found'
        else:
            rules, key, kind = roles.get((ns, role_name)), f"Role/{ns}/{role_name}", "Role"
            missing = f'role.rbac.authorization.k8s.io "{role_name}" not found'
        for subject, described in _subjects(binding, ns):
            if rules is None:
                policy.namespaced_errors.setdefault(ns, {}).setdefault(subject, []).append(missing)
                continue
            via = f'RoleBinding "{binding_name}/{ns}" of {kind} "{role_name}" to {described}'
            grants = policy.namespaced.setdefault(ns, {}).setdefault(subject, [])
            grants.extend(_Grant((key, i), r, via) for i, r in enumerate(rules))
    return policy


def _fingerprint(lister: Lister) -> tuple[Any, ...]:
    return tuple(
        tuple(
            (
                _meta(o).get("namespace", ""),
                _meta(o).get("name", ""),
                _meta(o).get("resourceVersion", ""),
            )
            for o in lister(RBAC_GROUP, plural)
        )
        for plural in ("clusterroles", "roles", "clusterrolebindings", "rolebindings")
    )


class RBACAuthorizer:
    """Kubernetes RBAC over the stored RBAC objects. Not thread-safe (one event loop)."""

    def __init__(self, lister: Lister, *, track_changes: bool = True) -> None:
        """``lister(api_group, plural)`` returns the stored objects as JSON dicts.

        With ``track_changes`` the objects' resourceVersions are compared on every request and the
        policy recompiled when they differ; without it the server must call :meth:`invalidate`
        after every RBAC write.
        """
        self._lister = lister
        self._track = track_changes
        self._policy: _Policy | None = None
        self._fingerprint: tuple[Any, ...] | None = None
        self._used: Counter[RuleKey] = Counter()

    def invalidate(self) -> None:
        """Drop the compiled policy; the next request recompiles it."""
        self._policy = None

    def _current(self) -> _Policy:
        if self._track:
            fingerprint = _fingerprint(self._lister)
            if fingerprint != self._fingerprint:
                self._policy, self._fingerprint = None, fingerprint
        if self._policy is None:
            self._policy = _compile(self._lister)
        return self._policy

    def authorize(self, attrs: RequestAttributes) -> Decision:
        """Allow or deny, with kube-apiserver's reason. Records the granting rule when allowed."""
        user = attrs.user
        if MASTERS in user.groups:
            return Decision(True, f'allowed by group "{MASTERS}"')
        policy = self._current()
        subjects: list[_Subject] = [("User", user.name), *(("Group", g) for g in user.groups)]
        scopes = [policy.cluster]
        if attrs.namespace and attrs.resource_request:
            scopes.append(policy.namespaced.get(attrs.namespace, {}))
        for scope in scopes:
            for subject in subjects:
                for grant in scope.get(subject, ()):
                    if self._grants(grant.rule, attrs):
                        self._used[grant.rule_key] += 1
                        return Decision(True, f"RBAC: allowed by {grant.via}", grant.rule_key)
        errors = [e for s in subjects for e in policy.cluster_errors.get(s, ())]
        if attrs.namespace and attrs.resource_request:
            ns_errors = policy.namespaced_errors.get(attrs.namespace, {})
            errors.extend(e for s in subjects for e in ns_errors.get(s, ()))
        if not errors:
            return Decision(False, "")
        joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return Decision(False, f"RBAC: {joined}")

    @staticmethod
    def _grants(rule: Rule, attrs: RequestAttributes) -> bool:
        if attrs.resource_request:
            return rule.allows_resource(
                attrs.verb, attrs.api_group, attrs.resource, attrs.subresource, attrs.name
            )
        return rule.allows_path(attrs.verb, attrs.path)

    def forbidden_message(self, attrs: RequestAttributes, reason: str | None = None) -> str:
        """The 403 ``Status`` message kube-apiserver writes, e.g. ``pods is forbidden: User
        "system:serviceaccount:ns:sa" cannot list resource "pods" in API group "" in the
        namespace "default"``. ``reason`` defaults to this authorizer's denial reason."""
        if reason is None:
            reason = self.authorize(attrs).reason
        name = attrs.user.name
        if not attrs.resource_request:
            text = f'User "{name}" cannot {attrs.verb} path "{attrs.path}"'
        else:
            resource = (
                f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
            )
            scope = (
                f'in the namespace "{attrs.namespace}"'
                if attrs.namespace
                else "at the cluster scope"
            )
            text = (
                f'User "{name}" cannot {attrs.verb} resource "{resource}" in API group '
                f'"{attrs.api_group}" {scope}'
            )
        if reason:
            text = f"{text}: {reason}"
        if not attrs.resource_request or not attrs.resource:
            return f"forbidden: {text}"
        qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
        if attrs.name:
            return f'{qualified} "{attrs.name}" is forbidden: {text}'
        return f"{qualified} is forbidden: {text}"

    def rules_for(self, user: UserInfo, namespace: str) -> list[Rule]:
        """The rules granted to ``user`` cluster-wide and in ``namespace``, cluster-wide ones
        first (a SelfSubjectRulesReview's answer). ``system:masters`` gets everything."""
        if MASTERS in user.groups:
            return list(EVERYTHING)
        policy = self._current()
        subjects: list[_Subject] = [("User", user.name), *(("Group", g) for g in user.groups)]
        scopes = [policy.cluster, policy.namespaced.get(namespace, {})]
        return [g.rule for scope in scopes for s in subjects for g in scope.get(s, ())]

    def used_rules(self) -> dict[RuleKey, int]:
        """How often each (role, rule index) granted a request since start (built-ins included)."""
        return dict(self._used)

    def unused_rules(self) -> list[RuleKey]:
        """The stored roles' rules that never granted a request, sorted."""
        return sorted(set(self._current().stored_rules) - set(self._used))

    def reset_usage(self) -> None:
        self._used.clear()
