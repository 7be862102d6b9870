"""The built-in resources the embedded server serves: one line per resource.

Read by :class:`.server.EmbeddedApiServer` to seed the :class:`.registry.Registry`. Short
names, categories and selectable fields follow kube-apiserver so that ``kubectl get ds``,
``kubectl get all`` and the kubelet's ``spec.nodeName`` selectors behave as users expect.
"""

from __future__ import annotations

from .registry import ALL_VERBS, ResourceType

_NO_COLLECTION = tuple(v for v in ALL_VERBS if v != "deletecollection")

_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_EVENTS_V1_FIELDS = (
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
)

R = ResourceType

BUILTINS: tuple[ResourceType, ...] = (
    # core/v1
    R("", "v1", "namespaces", "Namespace", False, ("ns",), subresources=("status", "finalize"),
      selectable_fields=("status.phase",), verbs=_NO_COLLECTION),
    R("", "v1", "nodes", "Node", False, ("no",), subresources=("status",),
      selectable_fields=("spec.unschedulable",)),
    R("", "v1", "pods", "Pod", True, ("po",), ("all",),
      ("status", "binding", "eviction", "log"), selectable_fields=_POD_FIELDS, generation=True,
      reset_status_on_create=True),
    R("", "v1", "events", "Event", True, ("ev",), selectable_fields=_EVENT_FIELDS),
    R("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",), subresources=("token",)),
    R("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    R("", "v1", "services", "Service", True, ("svc",), ("all",), ("status",)),
    R("", "v1", "secrets", "Secret", True, selectable_fields=("type",)),
    # apps/v1
    R("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), ("all",), ("status",),
      generation=True, reset_status_on_create=True),
    R("apps", "v1", "deployments", "Deployment", True, ("deploy",), ("all",),
      ("status", "scale"), generation=True, reset_status_on_create=True),
    R("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ("all",), ("status", "scale"),
      generation=True, reset_status_on_create=True),
    R("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), ("all",),
      ("status", "scale"), generation=True, reset_status_on_create=True),
    # batch/v1
    R("batch", "v1", "jobs", "Job", True, (), ("all",), ("status",), generation=True,
      reset_status_on_create=True),
    # coordination.k8s.io/v1
    R("coordination.k8s.io", "v1", "leases", "Lease", True),
    # resource.k8s.io/v1
    R("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False, generation=True),
    R("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True,
      subresources=("status",), reset_status_on_create=True),
    R("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    R("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False,
      selectable_fields=("spec.nodeName", "spec.driver"), generation=True),
    # rbac.authorization.k8s.io/v1
    R("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    R("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    R("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    R("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    # admissionregistration.k8s.io/v1 (stored, not enforced)
    R("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
      "ValidatingAdmissionPolicy", False, ("vap",), ("api-extensions",), ("status",),
      generation=True, reset_status_on_create=True),
    R("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
      "ValidatingAdmissionPolicyBinding", False, ("vapb",), ("api-extensions",),
      generation=True),
    # apiextensions.k8s.io/v1
    R("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
      False, ("crd", "crds"), ("api-extensions",), ("status",), generation=True,
      reset_status_on_create=True),
    # events.k8s.io/v1: a second view of the core/v1 events (see conversion.py)
    R("events.k8s.io", "v1", "events", "Event", True, ("ev",),
      selectable_fields=_EVENTS_V1_FIELDS, conversion="events.k8s.io/v1", storage_group=""),
    # computed reviews (kubectl auth can-i / whoami): created, never stored
    R("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
      verbs=("create",)),
    R("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False,
      verbs=("create",)),
    R("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False,
      verbs=("create",)),
    R("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False,
      verbs=("create",)),
    # networking.k8s.io/v1 (stored, not enforced)
    R("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",),
      generation=True),
)  # fmt: skip
