"""Resource types the project talks to, and how their REST paths are built.

A :class:`Resource` names one kind of object on the API server (group, version, plural, kind,
scope); :mod:`computedomain.kube.rest` turns it into URLs with :meth:`Resource.path`. The
constants below cover every resource the controller, the kubelet plugin, the daemon and the
installer use; anything else can be described ad hoc with a new ``Resource(...)``. No I/O.
"""

from __future__ import annotations

from urllib.parse import quote

import attrs

from computedomain.api import names


def _validate_segment(kind: str, value: str) -> str:
    """Reject values that cannot be a single URL path segment; quote the rest."""
    if not value or value in {".", ".."}:
        msg = f"invalid {kind} {value!r}: must be a non-empty name other than '.' and '..'"
        raise ValueError(msg)
    return quote(value, safe="")


@attrs.frozen
class Resource:
    """One resource type: ``group`` is "" for the core API; ``plural`` is the URL segment."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, otherwise ``group/version`` (the objects' apiVersion)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base(self) -> str:
        """``/api/v1`` or ``/apis/<group>/<version>``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The REST path for a collection, an object, or an object's subresource. Pure.

        A namespaced resource without ``namespace`` gives the all-namespaces collection path
        (only valid for list and watch); a cluster-scoped resource with a ``namespace`` is a
        caller bug and raises ValueError, as does a ``subresource`` without a ``name`` or any
        segment that is empty, ``.`` or ``..``. Segments are percent-quoted.
        """
        parts = [self.base]
        if namespace is not None:
            if not self.namespaced:
                msg = f"{self.kind} is cluster-scoped; got namespace {namespace!r}"
                raise ValueError(msg)
            parts.append(f"namespaces/{_validate_segment('namespace', namespace)}")
        parts.append(self.plural)
        if name is not None:
            if self.namespaced and namespace is None:
                msg = f"{self.kind} {name!r}: a namespaced object needs a namespace"
                raise ValueError(msg)
            parts.append(_validate_segment("name", name))
        if subresource is not None:
            if name is None:
                msg = f"subresource {subresource!r} of {self.kind} needs an object name"
                raise ValueError(msg)
            parts.append(_validate_segment("subresource", subresource))
        return "/".join(parts)


def _core(plural: str, kind: str, *, namespaced: bool) -> Resource:
    return Resource("", "v1", plural, kind, namespaced)


NAMESPACES = _core("namespaces", "Namespace", namespaced=False)
NODES = _core("nodes", "Node", namespaced=False)
PODS = _core("pods", "Pod", namespaced=True)
EVENTS = _core("events", "Event", namespaced=True)
SERVICE_ACCOUNTS = _core("serviceaccounts", "ServiceAccount", namespaced=True)
CONFIG_MAPS = _core("configmaps", "ConfigMap", namespaced=True)
SECRETS = _core("secrets", "Secret", namespaced=True)

DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)

LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)

DEVICE_CLASSES = Resource("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
RESOURCE_CLAIMS = Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True)
RESOURCE_CLAIM_TEMPLATES = Resource(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True
)
RESOURCE_SLICES = Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)

COMPUTE_DOMAINS = Resource(
    names.API_GROUP, names.API_VERSION, names.COMPUTE_DOMAIN_PLURAL, names.COMPUTE_DOMAIN_KIND, True
)
COMPUTE_DOMAIN_CLIQUES = Resource(
    names.API_GROUP, names.API_VERSION, names.CLIQUE_PLURAL, names.CLIQUE_KIND, True
)

CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)

_RBAC = "rbac.authorization.k8s.io"
ROLES = Resource(_RBAC, "v1", "roles", "Role", namespaced=True)
CLUSTER_ROLES = Resource(_RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False)
ROLE_BINDINGS = Resource(_RBAC, "v1", "rolebindings", "RoleBinding", namespaced=True)
CLUSTER_ROLE_BINDINGS = Resource(
    _RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)

ALL: tuple[Resource, ...] = (
    NAMESPACES,
    NODES,
    PODS,
    EVENTS,
    SERVICE_ACCOUNTS,
    CONFIG_MAPS,
    SECRETS,
    DAEMON_SETS,
    DEPLOYMENTS,
    LEASES,
    DEVICE_CLASSES,
    RESOURCE_CLAIMS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_SLICES,
    COMPUTE_DOMAINS,
    COMPUTE_DOMAIN_CLIQUES,
    CUSTOM_RESOURCE_DEFINITIONS,
    ROLES,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    CLUSTER_ROLE_BINDINGS,
)


def for_kind(api_version: str, kind: str) -> Resource | None:
    """The known resource with this apiVersion and kind, or None. Pure."""
    for resource in ALL:
        if resource.api_version == api_version and resource.kind == kind:
            return resource
    return None
