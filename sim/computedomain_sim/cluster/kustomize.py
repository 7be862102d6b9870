"""Render a kustomization into objects: with ``kubectl kustomize`` when kubectl is installed (the
pinned one of the virtual environment first), and with our own renderer of the kustomize subset
``deployments/`` uses otherwise.

Called by :mod:`.install` (the simulated cluster installs exactly ``deployments/``) and by the
tests that render every overlay both ways and compare. Patches go through the API server's
RFC 6902 implementation (:mod:`computedomain_sim.apiserver.jsonpatch`).

The subset: ``resources`` (YAML files and directories holding a kustomization), ``components``
(``kind: Component``), ``patches`` (inline or from a file: JSON 6902 with a ``target`` selecting
kind/name/namespace/group/version, or a strategic-merge ``$patch: delete``, which removes the
object it names or the objects its ``target`` selects), ``images`` (``newName``/``newTag``/
``digest``) and ``replacements`` (field paths with ``[key=value]`` list selectors).
Transformers run in kustomize's order: patches, then images, then replacements, within each
kustomization; a component's run on what its parent has accumulated when the component is
listed. Any other field is refused with an error naming it, so the manifests cannot drift into
what we do not render.
Output is in kustomize's "legacy" order (namespaces, CRDs, RBAC first; webhooks last).
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from computedomain_sim.apiserver.jsonpatch import JsonPatchError, json_patch

__all__ = [
    "KustomizeError", "kubectl_program", "render", "render_builtin", "render_kubectl", "sort_legacy"
]  # fmt: skip

Obj = dict[str, Any]

_KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_SUPPORTED = frozenset(
    {"apiVersion", "kind", "resources", "components", "patches", "images", "replacements"}
)
_ORDER_FIRST = (
    "Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
    "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap",
    "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
    "PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
)  # fmt: skip
_ORDER_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


class KustomizeError(ValueError):
    """A kustomization we cannot render; the message names the file and the field."""


def render(directory: Path, *, use_kubectl: bool | None = None) -> list[Obj]:
    """Render the kustomization in ``directory``.

    ``use_kubectl``: True forces kubectl, False the built-in renderer, None (default) uses
    kubectl when there is one (see :func:`kubectl_program`). Not pure (reads files, may run
    kubectl). Raises :class:`KustomizeError`.
    """
    if use_kubectl is None:
        use_kubectl = kubectl_program() is not None
    return render_kubectl(directory) if use_kubectl else render_builtin(directory)


def kubectl_program() -> str | None:
    """The kubectl installed beside this interpreter (``make venv`` puts its pinned version
    there), else the first on PATH, else None: the pinned one first, so that a machine's own,
    older kubectl does not decide how the manifests render."""
    pinned = Path(sysconfig.get_path("scripts")) / "kubectl"
    if os.access(pinned, os.X_OK):
        return str(pinned)
    return shutil.which("kubectl")


def render_kubectl(directory: Path) -> list[Obj]:
    """``kubectl kustomize <directory>``, parsed. Raises :class:`KustomizeError` on failure."""
    kubectl = kubectl_program()
    if kubectl is None:
        msg = "kubectl is not installed"
        raise KustomizeError(msg)
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if result.returncode != 0:
        msg = f"kubectl kustomize {directory} failed: {result.stderr.strip()}"
        raise KustomizeError(msg)
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def render_builtin(directory: Path) -> list[Obj]:
    """Our renderer of the kustomize subset described in the module docstring.

    Reads files only. Raises :class:`KustomizeError` naming the file and field.
    """
    return sort_legacy(_build(directory.resolve(), expect="Kustomization", stack=()))


def sort_legacy(objects: Iterable[Obj]) -> list[Obj]:
    """Order objects as kustomize's legacy sort does. Pure."""

    def key(obj: Obj) -> tuple[int, str, str, str]:
        kind = str(obj.get("kind", ""))
        if kind in _ORDER_FIRST:
            rank = _ORDER_FIRST.index(kind)
        elif kind in _ORDER_LAST:
            rank = len(_ORDER_FIRST) + 1 + _ORDER_LAST.index(kind)
        else:
            rank = len(_ORDER_FIRST)
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        meta = obj.get("metadata") or {}
        gvk = f"{group or '~G'}_{version}_{kind}"
        return rank, gvk, str(meta.get("namespace", "")), str(meta.get("name", ""))

    return sorted(objects, key=key)


def _load_kustomization(directory: Path, expect: str) -> tuple[Path, Obj]:
    for name in _KUSTOMIZATION_FILES:
        path = directory / name
        if path.is_file():
            break
    else:
        msg = f"{directory}: no kustomization.yaml"
        raise KustomizeError(msg)
    doc = yaml.safe_load(path.read_text()) or {}
    if not isinstance(doc, dict):
        msg = f"{path}: not a mapping"
        raise KustomizeError(msg)
    kind = doc.get("kind", "Kustomization")
    if kind != expect:
        msg = f"{path}: kind is {kind!r}, expected {expect!r}"
        raise KustomizeError(msg)
    unknown = sorted(set(doc) - _SUPPORTED)
    if unknown:
        msg = f"{path}: field(s) {', '.join(unknown)} not supported by the built-in renderer"
        raise KustomizeError(msg)
    return path, doc


def _build(directory: Path, *, expect: str, stack: tuple[Path, ...]) -> list[Obj]:
    if directory in stack:
        msg = f"{directory}: cycle through {' -> '.join(map(str, stack))}"
        raise KustomizeError(msg)
    stack = (*stack, directory)
    path, doc = _load_kustomization(directory, expect)
    objects: list[Obj] = []
    for entry in _strings(doc, "resources", path):
        target = (directory / entry).resolve()
        if target.is_dir():
            objects.extend(_build(target, expect="Kustomization", stack=stack))
        elif target.is_file():
            objects.extend(d for d in yaml.safe_load_all(target.read_text()) if d)
        else:
            msg = f"{path}: resource {entry!r} does not exist"
            raise KustomizeError(msg)
    for entry in _strings(doc, "components", path):
        objects = _apply_component((directory / entry).resolve(), objects, stack)
    return _transform(path, doc, objects)


def _apply_component(directory: Path, objects: list[Obj], stack: tuple[Path, ...]) -> list[Obj]:
    path, doc = _load_kustomization(directory, "Component")
    own = _build_resources_only(path, doc)
    return _transform(path, doc, objects + own)


def _build_resources_only(path: Path, doc: Obj) -> list[Obj]:
    objects: list[Obj] = []
    for entry in _strings(doc, "resources", path):
        target = (path.parent / entry).resolve()
        if not target.is_file():
            msg = f"{path}: component resource {entry!r} must be a file"
            raise KustomizeError(msg)
        objects.extend(d for d in yaml.safe_load_all(target.read_text()) if d)
    return objects


def _transform(path: Path, doc: Obj, objects: list[Obj]) -> list[Obj]:
    for number, patch in enumerate(doc.get("patches") or []):
        objects = _apply_patch(path, number, patch, objects)
    for image in doc.get("images") or []:
        objects = [_set_image(obj, image, path) for obj in objects]
    for number, replacement in enumerate(doc.get("replacements") or []):
        objects = _replace(path, number, replacement, objects)
    return objects


def _strings(doc: Obj, field: str, path: Path) -> list[str]:
    value = doc.get(field) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        msg = f"{path}: {field} must be a list of strings"
        raise KustomizeError(msg)
    return value


def _matches(obj: Obj, selector: Mapping[str, Any]) -> bool:
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    meta = obj.get("metadata") or {}
    actual = {
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "group": group,
        "version": version,
    }
    for field, wanted in selector.items():
        if field not in actual:
            msg = f"selector field {field!r} not supported (kind, name, namespace, group, version)"
            raise KustomizeError(msg)
        if not re.fullmatch(str(wanted), str(actual[field])):
            return False
    return True


def _apply_patch(path: Path, number: int, patch: Obj, objects: list[Obj]) -> list[Obj]:
    where = f"{path}: patches[{number}]"
    if "patch" in patch:
        text = patch["patch"]
    elif "path" in patch:
        text = (path.parent / patch["path"]).read_text()
    else:
        msg = f"{where}: needs 'patch' or 'path'"
        raise KustomizeError(msg)
    body = yaml.safe_load(text)
    if isinstance(body, dict) and body.get("$patch") == "delete":
        return _apply_delete(where, body, patch.get("target"), objects)
    if not isinstance(body, list):
        msg = (
            f"{where}: only JSON 6902 patches (a list of operations) and strategic-merge "
            "'$patch: delete' patches are supported"
        )
        raise KustomizeError(msg)
    target = patch.get("target")
    if not isinstance(target, dict):
        msg = f"{where}: a JSON 6902 patch needs a 'target'"
        raise KustomizeError(msg)
    out: list[Obj] = []
    hits = 0
    for obj in objects:
        if _matches(obj, target):
            hits += 1
            try:
                out.append(json_patch(obj, body))
            except JsonPatchError as exc:
                msg = f"{where}: operation {exc.operation}: {exc}"
                raise KustomizeError(msg) from exc
        else:
            out.append(obj)
    if hits == 0:
        msg = f"{where}: target {target} matches no resource"
        raise KustomizeError(msg)
    return out


_DELETE_FIELDS = frozenset({"$patch", "apiVersion", "kind", "metadata"})


def _apply_delete(where: str, body: Obj, target: Any, objects: list[Obj]) -> list[Obj]:
    """Remove the objects a ``$patch: delete`` patch names: those its ``target`` selects, or
    else the one object of its own apiVersion, kind, name and namespace (as kustomize does).
    A delete patch with other fields would also merge them; that is not implemented."""
    extra = sorted(set(body) - _DELETE_FIELDS)
    meta = body.get("metadata") or {}
    if extra or not isinstance(meta, dict) or set(meta) - {"name", "namespace"}:
        msg = f"{where}: a '$patch: delete' patch may name the object only, found {extra or meta}"
        raise KustomizeError(msg)
    if target is None:
        group, _, version = str(body.get("apiVersion", "")).rpartition("/")
        target = {
            "kind": re.escape(str(body.get("kind", ""))),
            "name": re.escape(str(meta.get("name", ""))),
            "namespace": re.escape(str(meta.get("namespace", ""))),
            "group": re.escape(group),
            "version": re.escape(version),
        }
    elif not isinstance(target, dict):
        msg = f"{where}: 'target' must be a mapping"
        raise KustomizeError(msg)
    kept = [obj for obj in objects if not _matches(obj, target)]
    if len(kept) == len(objects):
        msg = f"{where}: the object to delete ({target}) matches no resource"
        raise KustomizeError(msg)
    return kept


_IMAGE_RE = re.compile(r"^(?P<name>[^@]+?)(?::(?P<tag>[^:/@]+))?(?:@(?P<digest>.+))?$")


def _set_image(obj: Obj, image: Obj, path: Path) -> Obj:
    name = image.get("name")
    if not isinstance(name, str):
        msg = f"{path}: images[].name is required"
        raise KustomizeError(msg)
    obj = copy.deepcopy(obj)
    for container in _containers(obj):
        current = container.get("image")
        match = _IMAGE_RE.match(current) if isinstance(current, str) else None
        if match is None or match["name"] != name:
            continue
        new = image.get("newName", name)
        if "digest" in image:
            container["image"] = f"{new}@{image['digest']}"
        elif "newTag" in image:
            container["image"] = f"{new}:{image['newTag']}"
        else:
            tag = f":{match['tag']}" if match["tag"] else ""
            digest = f"@{match['digest']}" if match["digest"] else ""
            container["image"] = f"{new}{tag}{digest}"
    return obj


def _containers(node: Any) -> Iterable[Obj]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from (c for c in value if isinstance(c, dict))
            else:
                yield from _containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _containers(item)


def _replace(path: Path, number: int, replacement: Obj, objects: list[Obj]) -> list[Obj]:
    where = f"{path}: replacements[{number}]"
    source = replacement.get("source") or {}
    selector = {k: v for k, v in source.items() if k not in ("fieldPath", "options")}
    sources = [obj for obj in objects if _matches(obj, selector)]
    if len(sources) != 1:
        msg = f"{where}: source {selector} matches {len(sources)} resources, not exactly one"
        raise KustomizeError(msg)
    value = _field_get(sources[0], source.get("fieldPath", "metadata.name"), where)
    out = [copy.deepcopy(obj) for obj in objects]
    for target in replacement.get("targets") or []:
        select = target.get("select") or {}
        options = target.get("options") or {}
        for obj in out:
            if not _matches(obj, select):
                continue
            for field_path in target.get("fieldPaths") or []:
                _field_set(obj, field_path, value, options, where)
    return out


def _segments(field_path: str) -> list[str]:
    """Split ``a.b.[name=x].c`` / ``metadata.labels.[app.kubernetes.io/name]`` into segments."""
    return [s for s in re.findall(r"\[[^\]]*\]|[^.\[\]]+", field_path) if s]


def _step(node: Any, segment: str, where: str, *, create: bool) -> Any:
    if segment.startswith("["):
        inner = segment[1:-1]
        if "=" in inner and isinstance(node, list):
            key, _, val = inner.partition("=")
            for item in node:
                if isinstance(item, dict) and str(item.get(key)) == val:
                    return item
            msg = f"{where}: no list item with {key}={val}"
            raise KustomizeError(msg)
        segment = inner
    if not isinstance(node, dict):
        msg = f"{where}: cannot select {segment!r} in a {type(node).__name__}"
        raise KustomizeError(msg)
    if segment not in node:
        if not create:
            msg = f"{where}: field {segment!r} does not exist"
            raise KustomizeError(msg)
        node[segment] = {}
    return node[segment]


def _field_get(obj: Obj, field_path: str, where: str) -> Any:
    node: Any = obj
    for segment in _segments(field_path):
        node = _step(node, segment, where, create=False)
    return copy.deepcopy(node)


def _field_set(obj: Obj, field_path: str, value: Any, options: Obj, where: str) -> None:
    segments = _segments(field_path)
    node: Any = obj
    create = bool(options.get("create", False))
    for segment in segments[:-1]:
        node = _step(node, segment, where, create=create)
    last = segments[-1].strip("[]")
    if not isinstance(node, dict) or (last not in node and not create):
        msg = f"{where}: field {field_path!r} does not exist"
        raise KustomizeError(msg)
    if "delimiter" in options:
        parts = str(node.get(last, "")).split(options["delimiter"])
        index = int(options.get("index", 0))
        if not 0 <= index < len(parts):
            msg = f"{where}: index {index} out of range in {node.get(last)!r}"
            raise KustomizeError(msg)
        parts[index] = str(value)
        value = options["delimiter"].join(parts)
    node[last] = value
