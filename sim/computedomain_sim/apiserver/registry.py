"""The resource table: which REST resources the server serves and how each behaves.

One :class:`ResourceType` per served (group, version, plural). Built-ins come from
:mod:`.kinds` (one line each); CustomResourceDefinitions add and remove entries at run time
through :meth:`Registry.add` / :meth:`Registry.remove` (called by :mod:`.crds`). Everything
else (discovery, OpenAPI, URL routing, storage keys, field selectors, GC owner lookup) reads
this table, so adding a built-in never touches a handler.

Storage is keyed by :attr:`ResourceType.storage_key` (group, plural), shared by every served
version of a resource; a version view may differ only in ``apiVersion`` (and, for the two
Event APIs, field names, see :mod:`.conversion`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator

import attrs

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")


@attrs.frozen
class ResourceType:
    """How one served resource behaves; immutable, shared by every request."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    # Field-selector labels beyond metadata.name/metadata.namespace, as JSON paths.
    selectable_fields: tuple[str, ...] = ()
    # Whether metadata.generation is maintained, and which top-level keys count as "spec".
    generation: bool = False
    # Whether create drops any status the client sent (most kinds with a status subresource).
    reset_status_on_create: bool = False
    custom: bool = False  # served by a CRD
    storage_version: str = ""  # the version objects are stored in (CRDs); "" = self.version
    # For the two Event APIs: the name of a conversion between this view and storage.
    conversion: str = ""
    storage_group: str | None = None  # share another group's storage (events.k8s.io)
    # Printer columns (CRD additionalPrinterColumns): (name, type, jsonPath, priority).
    printer_columns: tuple[tuple[str, str, str, int], ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @functools.cached_property
    def storage_key(self) -> tuple[str, str]:
        group = self.group if self.storage_group is None else self.storage_group
        return (group, self.plural)

    @functools.cached_property
    def qualified(self) -> str:
        """``plural.group`` as used in error messages (``pods``, ``leases.coordination.k8s.io``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def field_labels(self) -> tuple[str, ...]:
        return ("metadata.name", "metadata.namespace", *self.selectable_fields)


class Registry:
    """The mutable set of served resource types (built-ins plus CRD-served ones).

    Not thread-safe; used from the server's event loop only.
    """

    def __init__(self, builtins: Iterable[ResourceType] = ()) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceType] = {}
        self._versions: dict[tuple[str, str], tuple[ResourceType, ...]] = {}
        self.generation = 0  # bumped on every change; discovery caches key on it
        for rt in builtins:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        """Serve ``rt``, replacing any entry for the same group/version/plural."""
        old = self._by_gvr.get((rt.group, rt.version, rt.plural))
        if old is not None:
            self._by_gvk.pop((old.group, old.version, old.kind), None)
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self._by_gvk[(rt.group, rt.version, rt.kind)] = rt
        self._changed()

    def _changed(self) -> None:
        self.generation += 1
        versions: dict[tuple[str, str], list[ResourceType]] = {}
        for rt in self._by_gvr.values():
            versions.setdefault(rt.storage_key, []).append(rt)
        self._versions = {k: tuple(v) for k, v in versions.items()}

    def remove(self, group: str, plural: str) -> None:
        """Stop serving every version of ``plural.group``; idempotent."""
        for key in [k for k in self._by_gvr if k[0] == group and k[2] == plural]:
            rt = self._by_gvr.pop(key)
            self._by_gvk.pop((rt.group, rt.version, rt.kind), None)
        self._changed()

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        return self._by_gvk.get((group, version, kind))

    def by_group_kind(self, group: str, kind: str) -> ResourceType | None:
        """Any served version of ``kind`` in ``group`` (owner references name a version that
        may no longer be served; the GC still needs the resource)."""
        for rt in self._by_gvr.values():
            if rt.group == group and rt.kind == kind:
                return rt
        return None

    def versions(self, key: tuple[str, str]) -> tuple[ResourceType, ...]:
        """Every served view of a storage key (all versions, converted views included)."""
        return self._versions.get(key, ())

    def by_storage(self, key: tuple[str, str]) -> ResourceType | None:
        """The storage-version view of a storage key."""
        found = None
        for rt in self._versions.get(key, ()):
            if rt.conversion == "":
                if not rt.storage_version or rt.storage_version == rt.version:
                    return rt
                found = rt
        return found

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_gvr.values()))

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions, in registration order (first = preferred)."""
        out: dict[str, list[str]] = {}
        for rt in self._by_gvr.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_gvr.values() if rt.group == group and rt.version == version]
