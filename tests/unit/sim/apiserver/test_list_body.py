"""List bodies as kube-apiserver writes them: a built-in kind's items carry no ``apiVersion``
or ``kind`` (whatever the stored object's key order), a custom resource list says
``continue`` even when empty."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from computedomain_sim.apiserver import wire
from computedomain_sim.apiserver.store import dumps


@given(
    st.permutations(["apiVersion", "kind", "metadata", "data"]),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
def test_items_lose_their_type_meta_whatever_the_key_order(
    order: list[str], data: dict[str, str]
) -> None:
    full = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": data}
    raw = dumps({k: full[k] for k in order})
    assert json.loads(wire.without_type_meta(raw)) == {"metadata": {"name": "a"}, "data": data}


def test_a_custom_list_says_continue_even_when_empty() -> None:
    custom = json.loads(wire.list_body("WidgetList", "x.io/v1", 7, [], custom=True))
    assert custom["metadata"] == {"resourceVersion": "7", "continue": ""}
    builtin = json.loads(wire.list_body("ConfigMapList", "v1", 7, []))
    assert builtin["metadata"] == {"resourceVersion": "7"}
