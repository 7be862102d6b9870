"""Informer handlers that enqueue keys: resyncs dropped, owner mapping, moved objects."""

from __future__ import annotations

from typing import Any

from computedomain.kube.informer import EnqueueHandler, FuncHandler, is_resync


def obj(name: str, rv: str, owner: str = "") -> dict[str, Any]:
    labels = {"owner": owner} if owner else {}
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "labels": labels}}


class Keys:
    def __init__(self) -> None:
        self.added: list[str] = []

    def add(self, key: str) -> None:
        self.added.append(key)


def by_owner(o: dict[str, Any]) -> str | None:
    owner = o["metadata"]["labels"].get("owner")
    return f"ns/{owner}" if owner else None


def test_resyncs_are_dropped_unless_asked_for() -> None:
    keys = Keys()
    handler = EnqueueHandler(keys)
    a = obj("a", "5")
    handler.on_update(a, a)
    handler.on_update(a, obj("a", "5"))  # relisted, unchanged
    assert keys.added == []
    handler.on_update(a, obj("a", "6"))
    handler.on_add(a)
    handler.on_delete(a)
    assert keys.added == ["ns/a"] * 3
    eager = Keys()
    EnqueueHandler(eager, include_resync=True).on_update(a, a)
    assert eager.added == ["ns/a"]


def test_owner_mapping_enqueues_old_and_new_owner_and_skips_orphans() -> None:
    keys = Keys()
    handler = EnqueueHandler(keys, key=by_owner)
    handler.on_add(obj("pod", "1"))  # no owner: nothing to do
    handler.on_update(obj("pod", "1", owner="cd1"), obj("pod", "2", owner="cd2"))
    assert keys.added == ["ns/cd2", "ns/cd1"]


def test_is_resync_and_func_handler() -> None:
    assert is_resync(obj("a", "1"), obj("a", "1"))
    assert not is_resync(obj("a", "1"), obj("a", "2"))
    assert not is_resync({"metadata": {}}, {"metadata": {}})  # no versions: assume a change
    calls: list[str] = []
    handler = FuncHandler(add=lambda o: calls.append("add"))
    handler.on_add(obj("a", "1"))
    handler.on_update(obj("a", "1"), obj("a", "2"))  # no function: ignored
    handler.on_delete(obj("a", "1"))
    assert calls == ["add"]
