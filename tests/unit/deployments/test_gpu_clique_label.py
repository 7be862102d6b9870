"""The ``nvidia.com/gpu.clique`` label's install pieces: the chart value
``kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled`` renders exactly the base with
``components/gpu-clique-label``, and only then may the plugin patch Nodes."""

from __future__ import annotations

import os
from pathlib import Path

from computedomain_sim.cluster import kustomize

from .chart import DEPLOYMENTS, render, without_release_labels

VALUE = "kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled"
ROLE = ("ClusterRole", "computedomain-kubelet-plugin")
PLUGIN = ("DaemonSet", "computedomain-kubelet-plugin")


def with_component(directory: Path) -> dict[tuple[str, str], dict[str, object]]:
    directory.mkdir()
    base = os.path.relpath(DEPLOYMENTS / "base", directory)
    component = os.path.relpath(DEPLOYMENTS / "components" / "gpu-clique-label", directory)
    (directory / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {base}\ncomponents:\n  - {component}\n"
    )
    return {(o["kind"], o["metadata"]["name"]): o for o in kustomize.render_builtin(directory)}


def node_verbs(objects: dict[tuple[str, str], dict[str, object]]) -> list[str]:
    rules = objects[ROLE]["rules"]
    assert isinstance(rules, list)
    (nodes,) = [r for r in rules if r["resources"] == ["nodes"]]
    return list(nodes["verbs"])


def plugin_env(objects: dict[tuple[str, str], dict[str, object]], name: str) -> str:
    (container,) = objects[PLUGIN]["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    (entry,) = [e for e in container["env"] if e["name"] == name]
    return str(entry["value"])


def test_enabled_the_chart_renders_the_component(tmp_path: Path) -> None:
    rendered = without_release_labels(render(f"--set={VALUE}=true"))
    assert rendered == with_component(tmp_path / "overlay")
    assert node_verbs(rendered) == ["get", "list", "watch", "update", "patch"]
    assert plugin_env(rendered, "GPU_CLIQUE_LABEL_ENABLED") == "true"


def test_off_by_default_without_the_patch_permission() -> None:
    rendered = render()
    assert node_verbs(rendered) == ["get", "list", "watch", "update"]
    assert plugin_env(rendered, "GPU_CLIQUE_LABEL_ENABLED") == "false"
