"""What apply sends together: independent writes of one kind on distinct objects."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from computedomain.controller.actions import (
    Action,
    AddFinalizer,
    Create,
    Delete,
    Emit,
    Kind,
    Ref,
    RemoveFinalizer,
    RemoveNodeLabels,
    Wait,
    WriteStatus,
)
from computedomain.controller.applying import batches

CD = Ref(Kind.COMPUTE_DOMAIN, "user", "cd", "uid")
DS = Ref(Kind.DAEMON_SET, "driver", "d")
DRCT = Ref(Kind.RESOURCE_CLAIM_TEMPLATE, "driver", "d")
WRCT = Ref(Kind.RESOURCE_CLAIM_TEMPLATE, "user", "chan")


def test_a_new_domain_writes_its_objects_and_status_together_after_the_finalizer() -> None:
    actions: list[Action] = [
        AddFinalizer(CD),
        Create(DRCT, {}),
        Create(DS, {}),
        Create(WRCT, {}),
        Emit("Normal", "Created", "created"),
        WriteStatus(CD, {}, "NotReady"),
    ]
    assert [len(b) for b in batches(actions)] == [1, 3, 1, 1]
    status_last: list[Action] = [*actions[:4], actions[5], actions[4]]
    assert [len(b) for b in batches(status_last)] == [1, 4, 1]


def test_a_teardown_deletes_together_then_unfinalizes_together() -> None:
    actions: list[Action] = [
        Delete(WRCT),
        Delete(DRCT),
        Delete(DS),
        RemoveNodeLabels("uid"),
        RemoveFinalizer(WRCT),
        RemoveFinalizer(DRCT),
        RemoveFinalizer(DS),
        Wait("waiting"),
    ]
    assert [len(b) for b in batches(actions)] == [3, 1, 3, 1]


def test_two_writes_to_one_object_stay_in_order() -> None:
    assert [len(b) for b in batches([Delete(DS), Delete(DS), Delete(WRCT)])] == [1, 2]
    gone = Ref(DS.kind, DS.namespace, DS.name, "old-uid")  # another incarnation, same name
    assert [len(b) for b in batches([RemoveFinalizer(gone), Create(DS, {})])] == [1, 1]


refs = st.sampled_from([CD, DS, DRCT, WRCT])
actions = st.one_of(
    refs.map(AddFinalizer),
    refs.map(lambda r: Create(r, {})),
    refs.map(Delete),
    refs.map(RemoveFinalizer),
    refs.map(lambda r: WriteStatus(r, {}, "Ready")),
    st.just(RemoveNodeLabels("uid")),
    st.just(Emit("Normal", "R", "m")),
)


@given(st.lists(actions, max_size=12))
def test_batches_keep_the_plan_order_and_only_group_independent_writes(
    plan: list[Action],
) -> None:
    grouped = batches(plan)
    assert [a for batch in grouped for a in batch] == plan
    for batch in grouped:
        if len(batch) > 1:
            assert all(
                isinstance(a, Create | Delete | RemoveFinalizer | WriteStatus) for a in batch
            )
            names = [(a.ref.kind, a.ref.namespace, a.ref.name) for a in batch]  # type: ignore[union-attr]
            assert len(set(names)) == len(names)
