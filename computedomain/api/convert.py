"""Converting our attrs models to and from their JSON wire form.

One cattrs converter serves every model. Field names and omission rules come from each field's
``wire`` metadata (:func:`computedomain.api.models.wire`), so the Go json tags upstream uses are
stated once, beside the field. Structuring ignores unknown keys: objects written by a newer
version (or by upstream, with fields we do not model) must still be readable. Opaque claim
configs are the exception and are decoded strictly by :mod:`computedomain.api.configs`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from computedomain.api import models

T = TypeVar("T")

converter = cattrs.Converter()


def _wire_name(field: attrs.Attribute[Any]) -> str:
    name = field.metadata.get("wire")
    if name is None:
        head, *rest = field.name.split("_")
        name = head + "".join(part.title() for part in rest)
    return str(name)


def _is_empty(value: Any) -> bool:
    """Go's omitempty: false, 0, "", nil and empty collections are omitted."""
    if value is None:
        return True
    if isinstance(value, bool | int | float | str | tuple | list | dict):
        return not value
    if isinstance(value, Mapping):
        return len(value) == 0
    return False


def _unstructure_factory(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    fields = attrs.fields(cls)
    plan = [(f.name, _wire_name(f), f.metadata.get("omit", models.OMIT_EMPTY)) for f in fields]

    def unstructure(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr, key, omit in plan:
            value = getattr(obj, attr)
            if (omit == models.OMIT_NONE and value is None) or (
                omit == models.OMIT_EMPTY and _is_empty(value)
            ):
                continue
            out[key] = converter.unstructure(value)
        return out

    return unstructure


def _structure_factory(cls: type[Any]) -> Callable[[Any, Any], Any]:
    overrides = {f.name: override(rename=_wire_name(f)) for f in attrs.fields(cls)}
    return make_dict_structure_fn(cls, converter, **overrides)  # type: ignore[arg-type]


def _structure_status(value: Any, _: Any) -> models.Status | None:
    # Upstream's "no status" is the empty string; treat it as absent.
    if value in (None, ""):
        return None
    return models.Status(value)


converter.register_unstructure_hook_factory(attrs.has, _unstructure_factory)
converter.register_structure_hook_factory(attrs.has, _structure_factory)
converter.register_structure_hook(models.Status | None, _structure_status)
converter.register_unstructure_hook(enum.StrEnum, lambda value: str(value.value))
converter.register_structure_hook_func(
    lambda t: t == Mapping[str, str],
    lambda value, _: {str(k): str(v) for k, v in (value or {}).items()},
)


def to_wire(obj: Any) -> dict[str, Any]:
    """The JSON-ready dict of a model, with upstream's names and omissions. Pure."""
    result = converter.unstructure(obj)
    if not isinstance(result, dict):
        msg = f"{type(obj).__name__} is not a model"
        raise TypeError(msg)
    return result


def from_wire(cls: type[T], data: Mapping[str, Any]) -> T:
    """Build a model from its JSON dict; unknown keys are ignored. Raises cattrs errors."""
    return converter.structure(dict(data), cls)


def compute_domain(obj: Mapping[str, Any]) -> models.ComputeDomain:
    """Shorthand for ``from_wire(ComputeDomain, obj)``."""
    return from_wire(models.ComputeDomain, obj)


def clique(obj: Mapping[str, Any]) -> models.ComputeDomainClique:
    """Shorthand for ``from_wire(ComputeDomainClique, obj)``."""
    return from_wire(models.ComputeDomainClique, obj)
