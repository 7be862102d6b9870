"""The informer's cache: objects by key, plus named secondary indexes.

An :class:`~computedomain.kube.informer.Informer` owns one :class:`Store` and is its only writer
(``replace``/``upsert``/``delete``); controllers, the plugin and the daemon read it through
``get``/``list``/``keys``/``by_index`` and :class:`~computedomain.kube.mutationcache.MutationCache`
layers read-your-writes on top. Objects are the decoded JSON dicts from the API server and are
shared, never copied on read: **never mutate an object you got from a store** — copy it first
(``copy.deepcopy``) and edit the copy. Index functions are also here (by label value, by UID, by
``spec.nodeName``, by owner UID, by any field). Single event loop; no I/O.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from computedomain.runtime import logs

IndexFunc = Callable[[dict[str, Any]], list[str]]

_log = logs.get_logger(__name__)


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones. Pure.

    Raises ValueError when the object has no ``metadata.name``.
    """
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        msg = f"object of kind {obj.get('kind', '?')!r} has no metadata.name"
        raise ValueError(msg)
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


def split_key(key: str) -> tuple[str | None, str]:
    """``(namespace, name)`` from a key made by :func:`object_key`. Pure."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else (None, key)


def resource_version(obj: Mapping[str, Any] | None) -> str:
    """``metadata.resourceVersion`` or "" (pure)."""
    if not obj:
        return ""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Store:
    """Objects by key with named indexes. See the module docstring for the read-only rule."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._values: dict[str, dict[str, list[str]]] = {}  # key -> index name -> its values
        if indexers:
            self.add_indexers(indexers)

    # -- reading -----------------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached object with this key, or None. Do not mutate it."""
        return self._items.get(key)

    def list(self) -> builtins.list[dict[str, Any]]:
        """Every cached object (in no particular order). Do not mutate them."""
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def index_names(self) -> builtins.list[str]:
        return list(self._indexers)

    def index_func(self, index_name: str) -> IndexFunc:
        """The function behind an index (to test objects not in the store against it)."""
        try:
            return self._indexers[index_name]
        except KeyError:
            known = ", ".join(sorted(self._indexers)) or "none"
            msg = f"no index named {index_name!r} (known: {known})"
            raise KeyError(msg) from None

    def by_index(self, index_name: str, value: str) -> builtins.list[dict[str, Any]]:
        """Objects whose index function returned ``value``. Raises KeyError for unknown indexes."""
        return [self._items[k] for k in sorted(self.index_keys(index_name, value))]

    def index_keys(self, index_name: str, value: str) -> set[str]:
        """Keys of the objects in ``by_index(index_name, value)``."""
        if index_name not in self._indices:
            known = ", ".join(sorted(self._indexers)) or "none"
            msg = f"no index named {index_name!r} (known: {known})"
            raise KeyError(msg)
        return set(self._indices[index_name].get(value, ()))

    def index_values(self, index_name: str) -> builtins.list[str]:
        """Every value currently present in an index."""
        return list(self._indices[index_name])

    # -- writing (the informer only) ---------------------------------------------------------

    def indexer(self, name: str) -> IndexFunc | None:
        """The function registered under the index ``name``, or None."""
        return self._indexers.get(name)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register more indexes and index the current contents. Names must be new."""
        for name, func in indexers.items():
            if name in self._indexers:
                msg = f"index {name!r} is already registered"
                raise ValueError(msg)
            self._indexers[name] = func
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._index_one(name, func, key, obj)

    def upsert(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Insert or replace ``obj``; return the object it replaced, if any."""
        key = object_key(obj)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key)
        self._items[key] = obj
        for name, func in self._indexers.items():
            self._index_one(name, func, key, obj)
        return old

    def delete(self, key: str) -> dict[str, Any] | None:
        """Remove the object with this key; return it, or None when absent."""
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key)
        return old

    def replace(self, objects: Iterable[dict[str, Any]]) -> None:
        """Make the contents exactly ``objects`` (after a relist)."""
        self._items.clear()
        self._values.clear()
        for name in self._indices:
            self._indices[name] = {}
        for obj in objects:
            self.upsert(obj)

    def _index_one(self, name: str, func: IndexFunc, key: str, obj: dict[str, Any]) -> None:
        try:
            values = [v for v in func(obj) if isinstance(v, str)]
        except Exception as exc:  # bad data must not take the cache down
            _log.warning("index function failed", index=name, key=key, error=repr(exc))
            values = []
        self._values.setdefault(key, {})[name] = values
        index = self._indices[name]
        for value in values:
            index.setdefault(value, set()).add(key)

    def _unindex(self, key: str) -> None:
        for name, values in self._values.pop(key, {}).items():
            index = self._indices[name]
            for value in values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]


# -- index functions ---------------------------------------------------------------------------


def index_by_label(label: str) -> IndexFunc:
    """Index objects by the value of one label (objects without it are not indexed)."""

    def by_label(obj: dict[str, Any]) -> list[str]:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        value = labels.get(label)
        return [value] if isinstance(value, str) else []

    by_label.__name__ = f"by_label[{label}]"
    return by_label


def index_by_uid(obj: dict[str, Any]) -> list[str]:
    """Index objects by ``metadata.uid``."""
    uid = (obj.get("metadata") or {}).get("uid")
    return [uid] if isinstance(uid, str) and uid else []


def index_by_namespace(obj: dict[str, Any]) -> list[str]:
    """Index objects by ``metadata.namespace``."""
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if isinstance(namespace, str) and namespace else []


def index_by_node_name(obj: dict[str, Any]) -> list[str]:
    """Index pods (or anything with ``spec.nodeName``) by node."""
    return index_by_field("spec", "nodeName")(obj)


def index_by_owner_uid(obj: dict[str, Any]) -> list[str]:
    """Index objects by the UID of each of their owners."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [r["uid"] for r in refs if isinstance(r, dict) and isinstance(r.get("uid"), str)]


def index_by_field(*path: str) -> IndexFunc:
    """Index objects by the string value at a field path, e.g. ``("spec", "driver")``."""

    def by_field(obj: dict[str, Any]) -> list[str]:
        current: Any = obj
        for part in path:
            if not isinstance(current, dict):
                return []
            current = current.get(part)
        return [current] if isinstance(current, str) and current else []

    by_field.__name__ = f"by_field[{'.'.join(path)}]"
    return by_field
