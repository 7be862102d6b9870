"""The corpus's interactions through client-go: our program ``cd-conformance-client``
(``sim/controlplane/conformance``, built from the repository's Go module at the client-go
version it pins) runs one scenario per case and prints its operations' outcomes. Typed clients
send protobuf bodies (create and update of a ConfigMap, a DaemonSet, a ResourceClaimTemplate, a
Job, a Service), the dynamic client JSON (a custom resource and a built-in kind), a
SharedInformerFactory's informer resyncs, server-side apply through ApplyConfigurations
conflicts between two field managers, and a watch and a reflector from a resourceVersion the
server no longer keeps get 410 Expired (the reflector then lists again)."""

from __future__ import annotations

from .cases import Case, Cli, GoClient, kubectl
from .manifests import crd_ready

# A CRD for the expired-watch case alone (no other case may make it: the helm chart has a
# Gadget CRD): its storage (kube-apiserver's watch cache) starts when it is established, after
# the case's namespace was made.
RELIC_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: relics.conformance.example.com}
spec:
  group: conformance.example.com
  scope: Namespaced
  names: {plural: relics, singular: relic, kind: Relic}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""


def relic_crd_ready() -> tuple[Cli, Cli]:
    return (
        kubectl("apply", "-f", "-", stdin=RELIC_CRD, setup=True),
        kubectl(
            "wait", "--for=condition=Established", "crd/relics.conformance.example.com",
            "--timeout=60s", setup=True,
        ),
    )  # fmt: skip


# What a controller writes into a DaemonSet or a Job (status, its managedFields entry) lands
# at a time of its own: those cases leave both out of the objects returned (an operation's own
# "status" is its HTTP status, and stays).
_CONTROLLED = (("object", "status"), ("items", "status"), ("metadata", "managedFields"))


def case(name: str, category: str, *steps: Cli | GoClient, **kw: object) -> Case:
    return Case(f"clientgo-{name}", "client-go", category, steps, **kw)  # type: ignore[arg-type]


CASES: list[Case] = [
    case("typed-configmap", "typed (protobuf)", GoClient("typed-configmap")),
    case("typed-daemonset", "typed (protobuf)", GoClient("typed-daemonset"), drop=_CONTROLLED),
    case(
        "typed-resourceclaimtemplate", "typed (protobuf)", GoClient("typed-resourceclaimtemplate")
    ),
    case("typed-job", "typed (protobuf)", GoClient("typed-job"), drop=_CONTROLLED),
    case("typed-service", "typed (protobuf)", GoClient("typed-service")),
    case("dynamic-custom-resource", "dynamic", *crd_ready(), GoClient("dynamic-custom-resource")),
    case("dynamic-configmap", "dynamic", GoClient("dynamic-configmap")),
    case("informer-resync", "informer", GoClient("informer-resync")),
    case("apply-conflict", "apply", GoClient("apply-conflict")),
    case("watch-expired", "watch", *relic_crd_ready(), GoClient("watch-expired")),
]
