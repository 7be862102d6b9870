"""RBAC policy rules: matching one request against one rule, ClusterRole aggregation, and the
built-in bootstrap roles every cluster has.

Called by :mod:`.rbac` when it compiles the stored Roles and bindings. Matching follows
``k8s.io/component-helpers/auth/rbac`` (``VerbMatches``, ``APIGroupMatches``, ``ResourceMatches``
with ``resource/subresource`` and ``*/subresource``, ``ResourceNameMatches``,
``NonResourceURLMatches`` with a trailing ``*``). The built-ins mirror kube-apiserver's bootstrap
policy for ``system:discovery``, ``system:basic-user`` and ``system:public-info-viewer``, which
our components and kubectl rely on; they are rules here, not stored objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs


@attrs.frozen
class Rule:
    """One compiled ``PolicyRule``; sets are frozensets, ``*`` kept as a member."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str]
    non_resource_urls: tuple[str, ...]

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Rule:
        def strings(key: str) -> tuple[str, ...]:
            value = raw.get(key) or ()
            return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

        return cls(
            verbs=frozenset(strings("verbs")),
            api_groups=frozenset(strings("apiGroups")),
            resources=frozenset(strings("resources")),
            resource_names=frozenset(strings("resourceNames")),
            non_resource_urls=strings("nonResourceURLs"),
        )

    def allows_resource(
        self, verb: str, group: str, resource: str, subresource: str, name: str
    ) -> bool:
        """Whether this rule grants a resource request; pure."""
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        if "*" not in self.api_groups and group not in self.api_groups:
            return False
        combined = f"{resource}/{subresource}" if subresource else resource
        if not (
            "*" in self.resources
            or combined in self.resources
            or (subresource and f"*/{subresource}" in self.resources)
        ):
            return False
        return not self.resource_names or name in self.resource_names

    def allows_path(self, verb: str, path: str) -> bool:
        """Whether this rule grants a non-resource request (``GET /healthz``); pure."""
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        for url in self.non_resource_urls:
            if url in ("*", path) or (url.endswith("*") and path.startswith(url[:-1])):
                return True
        return False


def label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels, matchExpressions) against labels; an empty selector
    matches everything, as in ClusterRole aggregation."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key = expression.get("key", "")
        operator = expression.get("operator", "")
        values = expression.get("values") or ()
        present = key in labels
        if operator == "In" and (not present or labels[key] not in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def aggregated_rules(
    role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]]
) -> list[Any]:
    """The raw rules of a ClusterRole: its own, or, with an ``aggregationRule``, those of every
    other ClusterRole whose labels match one of the selectors (what the aggregation controller
    writes into ``rules``)."""
    aggregation = role.get("aggregationRule")
    if not isinstance(aggregation, Mapping):
        return list(role.get("rules") or ())
    selectors = aggregation.get("clusterRoleSelectors") or ()
    name = (role.get("metadata") or {}).get("name")
    rules: list[Any] = []
    for other in cluster_roles:
        meta = other.get("metadata") or {}
        if meta.get("name") == name:
            continue
        labels = meta.get("labels") or {}
        if any(label_selector_matches(s, labels) for s in selectors):
            rules.extend(r for r in other.get("rules") or () if r not in rules)
    return rules


AUTHENTICATED: Final = "system:authenticated"
UNAUTHENTICATED: Final = "system:unauthenticated"

_DISCOVERY_URLS: Final = [
    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
    "/openapi", "/openapi/*", "/readyz", "/version", "/version/",
]  # fmt: skip
# name -> (groups bound by the same-named ClusterRoleBinding, rules)
BUILTIN_CLUSTER_ROLES: Final[dict[str, tuple[tuple[str, ...], tuple[Rule, ...]]]] = {
    "system:discovery": (
        (AUTHENTICATED,),
        (
            Rule.from_json(
                {
                    "verbs": ["get"],
                    "nonResourceURLs": [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                }
            ),
        ),
    ),
    "system:basic-user": (
        (AUTHENTICATED,),
        (
            Rule.from_json(
                {
                    "verbs": ["create"],
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                }
            ),
            Rule.from_json(
                {
                    "verbs": ["create"],
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                }
            ),
        ),
    ),
    "system:public-info-viewer": (
        (AUTHENTICATED, UNAUTHENTICATED),
        (
            Rule.from_json(
                {
                    "verbs": ["get"],
                    "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                }
            ),
        ),
    ),
}
