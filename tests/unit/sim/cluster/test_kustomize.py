"""The built-in kustomize renderer renders exactly what kubectl's kustomize does, for every
kustomization in deployments/, and refuses what it does not implement."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from computedomain_sim.cluster import kustomize
from tests import binaries

DEPLOYMENTS = Path(__file__).parents[4] / "deployments"
KUSTOMIZATIONS = [
    "base",
    "overlays/sim",
    "overlays/leader-election",
    "overlays/gpu-operator",
    "overlays/host-managed",
]


@pytest.fixture
def pinned_kubectl() -> None:
    """kubectl from `make venv`, which the renderer runs (the test fails when it is missing)."""
    binaries.kubectl()


@pytest.mark.kubectl
def test_the_pinned_kubectl_renders_whatever_is_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert kustomize.kubectl_program() == binaries.kubectl()


@pytest.mark.kubectl
@pytest.mark.parametrize("directory", KUSTOMIZATIONS)
def test_same_objects_in_the_same_order_as_kubectl(directory: str) -> None:
    ours = kustomize.render_builtin(DEPLOYMENTS / directory)
    theirs = kustomize.render_kubectl(DEPLOYMENTS / directory)
    assert ours == theirs


def write(directory: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


CM = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  template:
    spec:
      containers:
        - name: app
          image: example.com/app:1
          env: [{name: IMG, value: x}]
"""


@pytest.mark.kubectl
@pytest.mark.usefixtures("pinned_kubectl")
def test_images_patches_replacements_and_components(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "base/kustomization.yaml": "resources: [deploy.yaml]\n",
            "base/deploy.yaml": CM,
            "comp/kustomization.yaml": """\
                apiVersion: kustomize.config.k8s.io/v1alpha1
                kind: Component
                patches:
                  - target: {kind: Deployment, name: web}
                    patch: |-
                      - {op: add, path: /spec/replicas, value: 3}
                """,
            "top/kustomization.yaml": """\
                resources: [../base]
                components: [../comp]
                images:
                  - {name: example.com/app, newName: registry.local/app, newTag: "2"}
                replacements:
                  - source:
                      kind: Deployment
                      name: web
                      fieldPath: spec.template.spec.containers.[name=app].image
                    targets:
                      - select: {kind: Deployment}
                        fieldPaths:
                          - spec.template.spec.containers.[name=app].env.[name=IMG].value
                """,
        },
    )
    (deploy,) = kustomize.render_builtin(tmp_path / "top")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.local/app:2"
    assert container["env"] == [{"name": "IMG", "value": "registry.local/app:2"}]
    assert deploy["spec"]["replicas"] == 3
    assert kustomize.render_kubectl(tmp_path / "top") == [deploy]


SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec: {ports: [{port: 80}]}
"""


@pytest.mark.kubectl
@pytest.mark.usefixtures("pinned_kubectl")
def test_delete_patches_remove_what_they_name_or_select(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "base/kustomization.yaml": "resources: [deploy.yaml, service.yaml, other.yaml]\n",
            "base/deploy.yaml": CM,
            "base/service.yaml": SERVICE,
            "base/other.yaml": SERVICE.replace("name: web", "name: other"),
            "comp/kustomization.yaml": """\
                apiVersion: kustomize.config.k8s.io/v1alpha1
                kind: Component
                patches:
                  - patch: |-
                      $patch: delete
                      apiVersion: apps/v1
                      kind: Deployment
                      metadata: {name: web, namespace: ns}
                  - target: {kind: Service, name: oth.*}
                    patch: |-
                      $patch: delete
                      apiVersion: v1
                      kind: Service
                      metadata: {name: any}
                """,
            "top/kustomization.yaml": "resources: [../base]\ncomponents: [../comp]\n",
        },
    )
    (service,) = kustomize.render_builtin(tmp_path / "top")
    assert (service["kind"], service["metadata"]["name"]) == ("Service", "web")
    assert kustomize.render_kubectl(tmp_path / "top") == [service]


@pytest.mark.parametrize(
    ("kustomization", "message"),
    [
        ("resources: [deploy.yaml]\nnamespace: other\n", "namespace not supported"),
        ("resources: [missing.yaml]\n", "resource 'missing.yaml' does not exist"),
        (
            "resources: [deploy.yaml]\npatches:\n  - target: {kind: Deployment}\n"
            "    patch: 'spec: {}'\n",
            "only JSON 6902 patches",
        ),
        (
            "resources: [deploy.yaml]\npatches:\n  - target: {kind: Service}\n    patch: '[]'\n",
            "matches no resource",
        ),
        (
            "resources: [deploy.yaml]\npatches:\n  - target: {kind: Deployment}\n"
            "    patch: '[{op: test, path: /kind, value: Pod}]'\n",
            r"patches\[0\]: operation 0: testing value /kind failed",
        ),
        ("resources: [.]\n", "cycle"),
        (
            "resources: [deploy.yaml]\npatches:\n  - patch: |-\n      $patch: delete\n"
            "      apiVersion: apps/v1\n      kind: Deployment\n      metadata: {name: web}\n",
            "the object to delete .* matches no resource",
        ),
        (
            "resources: [deploy.yaml]\npatches:\n  - patch: |-\n      $patch: delete\n"
            "      kind: Deployment\n      metadata: {name: web, namespace: ns}\n"
            "      spec: {replicas: 2}\n",
            "may name the object only",
        ),
    ],
    ids=[
        "unsupported field",
        "missing file",
        "strategic merge",
        "no target",
        "failed test",
        "cycle",
        "delete without namespace",
        "delete with fields",
    ],
)
def test_refusals_name_file_and_field(tmp_path: Path, kustomization: str, message: str) -> None:
    write(tmp_path, {"kustomization.yaml": kustomization, "deploy.yaml": CM})
    with pytest.raises(kustomize.KustomizeError, match=message) as info:
        kustomize.render_builtin(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_render_without_kubectl_uses_the_builtin_renderer() -> None:
    objects = kustomize.render(DEPLOYMENTS / "overlays" / "sim", use_kubectl=False)
    assert objects[0]["kind"] == "Namespace"
