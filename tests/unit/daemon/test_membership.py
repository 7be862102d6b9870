"""The pure membership plan: one own-entry change at a time, never another daemon's entry."""

from __future__ import annotations

import attrs
import pytest

from computedomain.api.models import DaemonInfo, Status
from computedomain.daemon import membership
from computedomain.daemon.membership import Change, Deregister, Register, Scope, SetStatus
from computedomain.policies import builtins
from computedomain.policies.hookspecs import IndexRequest

CLIQUE = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.1"
POLICY = builtins.LowestFreeIndex()
SCOPE = Scope(limit=4)


def entry(node: str, index: int, ip: str = "", **kw: object) -> DaemonInfo:
    fields = {"clique_id": CLIQUE, "status": Status.NOT_READY, "pod_uid": f"uid-{node}"}
    fields.update(kw)
    return DaemonInfo(node_name=node, ip_address=ip or f"10.0.0.{index + 1}", index=index, **fields)  # type: ignore[arg-type]


def register(node: str = "n9", ip: str = "10.0.9.9", **kw: object) -> Register:
    fields: dict[str, object] = {"clique_id": CLIQUE, "pod_uid": f"uid-{node}"}
    fields.update(kw)
    return Register(node_name=node, ip_address=ip, **fields)  # type: ignore[arg-type]


def plan(entries: tuple[DaemonInfo, ...], op: membership.Op, scope: Scope = SCOPE):
    return membership.plan(entries, op, policy=POLICY, scope=scope)


def test_a_join_is_appended_not_ready_with_the_lowest_free_index() -> None:
    current = (entry("a", 0), entry("b", 2))
    planned = plan(current, register())
    assert planned is not None
    assert planned.change is Change.INSERTED
    assert planned.entries[:2] == current  # other entries untouched, in order
    assert planned.entries[2] == DaemonInfo(
        node_name="n9",
        ip_address="10.0.9.9",
        clique_id=CLIQUE,
        index=1,
        status=Status.NOT_READY,
        pod_uid="uid-n9",
    )


def test_a_new_ip_keeps_index_and_status() -> None:
    current = (entry("a", 0), entry("n9", 3, status=Status.READY))
    planned = plan(current, register(ip="10.9.9.10"))
    assert planned is not None
    assert planned.change is Change.UPDATED
    assert planned.entries[1] == attrs.evolve(current[1], ip_address="10.9.9.10")


def test_a_replacement_pod_keeps_the_index_but_starts_not_ready() -> None:
    current = (entry("n9", 3, status=Status.READY, pod_uid="old"),)
    planned = plan(current, register(ip="10.9.9.10", pod_uid="new"))
    assert planned is not None
    assert planned.entries[0].index == 3
    assert planned.entries[0].pod_uid == "new"
    assert planned.entries[0].status is Status.NOT_READY


def test_a_replaced_daemon_does_not_take_its_entry_back() -> None:
    current = (entry("n9", 3, pod_uid="new"),)
    with pytest.raises(membership.Superseded):
        plan(current, register(pod_uid="old", takeover=False))


def test_nothing_to_write_when_the_entry_is_current() -> None:
    current = (entry("n9", 3, ip="10.0.9.9"),)
    assert plan(current, register()) is None
    assert plan(current, SetStatus("n9", Status.NOT_READY, "uid-n9")) is None


def test_an_upstream_entry_without_pod_uid_is_adopted() -> None:
    current = (entry("n9", 3, ip="10.0.9.9", pod_uid=None),)
    planned = plan(current, register())
    assert planned is not None
    assert planned.entries[0].pod_uid == "uid-n9"
    assert planned.entries[0].index == 3


def test_status_changes_only_the_status() -> None:
    current = (entry("a", 0), entry("n9", 1))
    planned = plan(current, SetStatus("n9", Status.READY, "uid-n9"))
    assert planned is not None
    assert planned.change is Change.STATUS_SET
    assert planned.entries == (current[0], attrs.evolve(current[1], status=Status.READY))


@pytest.mark.parametrize(
    "entries",
    [(), (entry("n9", 1, pod_uid="someone-else"),)],
    ids=["missing", "another-pod"],
)
def test_status_of_an_unlisted_entry_is_retried(entries: tuple[DaemonInfo, ...]) -> None:
    with pytest.raises(membership.NotListed, match="waiting for insertion"):
        plan(entries, SetStatus("n9", Status.READY, "uid-n9"))


def test_removal_is_by_node_name_and_pod_uid() -> None:
    current = (entry("a", 0), entry("n9", 1), entry("b", 2))
    planned = plan(current, Deregister("n9", "10.0.0.2", "uid-n9"))
    assert planned is not None
    assert planned.change is Change.REMOVED
    assert planned.entries == (current[0], current[2])
    assert planned.entry is None


def test_removal_never_takes_another_pods_entry_even_with_the_same_ip() -> None:
    current = (entry("n9", 1, ip="10.0.0.2", pod_uid="replacement"), entry("b", 2, ip="10.0.0.2"))
    assert plan(current, Deregister("n9", "10.0.0.2", "uid-n9")) is None


def test_removal_of_an_upstream_entry_falls_back_to_the_ip() -> None:
    current = (entry("n9", 1, ip="10.0.0.2", pod_uid=None),)
    assert plan(current, Deregister("n9", "10.0.0.3", "uid-n9")) is None
    planned = plan(current, Deregister("n9", "10.0.0.2", "uid-n9"))
    assert planned is not None
    assert planned.entries == ()


def test_a_full_index_space_is_a_retryable_error_with_upstreams_words() -> None:
    current = tuple(entry(f"n{i}", i) for i in range(4))
    with pytest.raises(membership.IndexSpaceFull, match=r"within maxNodesPerIMEXDomain \(4\)$"):
        plan(current, register())
    with pytest.raises(membership.IndexSpaceFull, match=f"for cliqueID {CLIQUE}"):
        plan(current, register(), Scope(limit=4, clique_id=CLIQUE))


def test_status_mode_counts_only_the_own_cliques_indices() -> None:
    other = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.2"
    current = (
        entry("x", 0, clique_id=other),
        entry("y", -1, clique_id=""),
        entry("a", 1),
    )
    planned = plan(current, register(), Scope(limit=4, clique_id=CLIQUE))
    assert planned is not None
    assert planned.entry is not None
    assert planned.entry.index == 0


def test_a_node_that_moved_clique_rejoins_with_a_new_index() -> None:
    other = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.2"
    current = (entry("a", 0), entry("n9", 0, clique_id=other))
    planned = plan(current, register(), Scope(limit=4, clique_id=CLIQUE))
    assert planned is not None
    assert planned.entry is not None
    assert (planned.entry.clique_id, planned.entry.index) == (CLIQUE, 1)
    assert len(planned.entries) == 2


@attrs.frozen
class _Always:
    answer: object
    name: str = "always"

    def allocate(self, request: IndexRequest) -> int | None:
        return self.answer  # type: ignore[return-value]


@pytest.mark.parametrize(
    "answer", [0, 7, -1, True, "1"], ids=["taken", "high", "neg", "bool", "str"]
)
def test_a_policy_answer_that_breaks_uniqueness_is_refused(answer: object) -> None:
    with pytest.raises(membership.PolicyViolation, match="'always'"):
        membership.plan((entry("a", 0),), register(), policy=_Always(answer), scope=SCOPE)


def test_the_policy_learns_the_previous_index_and_the_used_ones() -> None:
    seen: list[IndexRequest] = []

    @attrs.frozen
    class Spy:
        name: str = "spy"

        def allocate(self, request: IndexRequest) -> int | None:
            seen.append(request)
            return 3

    membership.plan(
        (entry("a", 0), entry("b", 1)), register(previous_index=3), policy=Spy(), scope=SCOPE
    )
    assert seen == [IndexRequest(node_name="n9", used={0: "a", 1: "b"}, limit=4, previous=3)]
