"""Structured log lines: one per event, key=value, quoted when needed."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from computedomain.runtime import logs


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    out = io.StringIO()
    logs.setup(4, "cd-test", stream=out)
    yield out
    root.handlers[:] = handlers
    root.setLevel(level)
    logs._state["verbosity"] = 0


def test_one_line_per_event_with_fields(stream: io.StringIO) -> None:
    log = logs.get_logger("computedomain.x").bind(key="ns/cd")
    log.info("reconciled things", actions=3, note='say "hi"')
    (line,) = stream.getvalue().splitlines()
    assert line.startswith("time=")
    assert ' level=info component=cd-test logger=computedomain.x msg="reconciled things"' in line
    assert line.endswith(' key=ns/cd actions=3 note="say \\"hi\\""')


def test_exceptions_stay_on_one_line(stream: io.StringIO) -> None:
    log = logs.get_logger("t")
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        log.exception("failed")
    assert len(stream.getvalue().splitlines()) == 1
    assert "error=" in stream.getvalue()


def test_verbosity_maps_to_levels(stream: io.StringIO) -> None:
    assert logs.level_for(0) == logging.INFO
    assert logs.level_for(4) == logging.DEBUG
    assert logs.level_for(7) == logs.TRACE
    assert logs.v(4)
    assert not logs.v(5)
    logs.get_logger("t").trace("hidden")
    logs.get_logger("t").debug("shown")
    assert "hidden" not in stream.getvalue()
    assert "shown" in stream.getvalue()
    with pytest.raises(ValueError, match="between 0 and 10"):
        logs.setup(11, "x")


def test_third_party_debug_lines_are_quiet_below_verbosity_6(stream: io.StringIO) -> None:
    logging.getLogger("grpc._cython.cygrpc").debug("Loaded running loop")
    logging.getLogger("kubernetes.aio.client.rest").debug("response body")
    logging.getLogger("computedomain.x").debug("ours")
    logging.getLogger("grpc._server").warning("a real problem")
    lines = stream.getvalue().splitlines()
    assert [line.split("msg=")[1] for line in lines] == ["ours", '"a real problem"']
    logs.setup(6, "cd-test", stream=stream)
    logging.getLogger("grpc._cython.cygrpc").debug("Loaded running loop")
    assert "Loaded running loop" in stream.getvalue()


def test_format_value() -> None:
    assert logs.format_value("plain") == "plain"
    assert logs.format_value("") == '""'
    assert logs.format_value("a=b") == '"a=b"'
    assert logs.format_value(None) == "None"
    assert logs.format_value("tab\there") == '"tab\\there"'
