"""The daemon's index memory in the domain directory: round trip, per clique, corrupt files."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from computedomain.daemon.indexmemory import FILE_NAME, IndexMemory
from computedomain.policies.builtins import LowestFreeIndex
from computedomain.policies.hookspecs import IndexRequest


def test_a_saved_index_is_loaded_by_the_next_daemon_of_the_clique(tmp_path: Path) -> None:
    IndexMemory.in_dir(tmp_path).save("c.1", 5)
    assert IndexMemory.in_dir(tmp_path).load("c.1") == 5
    assert IndexMemory.in_dir(tmp_path).load("c.2") is None


def test_nothing_remembered_without_a_file(tmp_path: Path) -> None:
    assert IndexMemory.in_dir(tmp_path).load("c.1") is None


def test_a_corrupt_memory_is_moved_aside_and_ignored(tmp_path: Path) -> None:
    for body in (b"{", b'{"cliqueID": 1, "index": 2}', b'{"cliqueID": "c", "index": -1}', b"[]"):
        (tmp_path / FILE_NAME).write_bytes(body)
        assert IndexMemory.in_dir(tmp_path).load("c") is None
        assert not (tmp_path / FILE_NAME).exists()
    assert len(list(tmp_path.glob(f"{FILE_NAME}.corrupt-*"))) == 4


def test_a_missing_directory_does_not_stop_the_daemon(tmp_path: Path) -> None:
    memory = IndexMemory.in_dir(tmp_path / "gone")
    memory.save("c", 1)  # logged, not raised
    assert memory.load("c") is None


@given(
    used=st.dictionaries(st.integers(0, 17), st.just("peer"), max_size=18),
    previous=st.none() | st.integers(-2, 20),
)
def test_lowest_free_returns_a_free_remembered_index_else_the_lowest(
    used: dict[int, str], previous: int | None
) -> None:
    index = LowestFreeIndex().allocate(
        IndexRequest(node_name="me", used=used, limit=18, previous=previous)
    )
    free = [i for i in range(18) if i not in used]
    if previous is not None and previous in free:
        assert index == previous
    else:
        assert index == (free[0] if free else None)
