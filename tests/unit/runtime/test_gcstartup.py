"""Start-up imports without the garbage collector: off inside, frozen and back on after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from computedomain.runtime import gcstartup


@pytest.fixture
def restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


@pytest.mark.usefixtures("restore_gc")
@pytest.mark.parametrize("enabled", [True, False], ids=["was-on", "was-off"])
def test_the_collector_is_off_inside_and_as_before_after(enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    gc.unfreeze()
    with gcstartup.paused():
        assert not gc.isenabled()
        made = [[] for _ in range(100)]  # objects the block creates
    assert gc.isenabled() is enabled
    assert gc.get_freeze_count() >= len(made)  # what the block made is frozen


@pytest.mark.usefixtures("restore_gc")
def test_an_error_in_the_block_still_turns_the_collector_back_on() -> None:
    gc.enable()
    with pytest.raises(ImportError), gcstartup.paused():
        raise ImportError("no such module")
    assert gc.isenabled()
