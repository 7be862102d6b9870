"""Profile documents: the stored profiles, and the Python and C readers refusing alike.

The C reader is driven through the library itself: ``nvmlInit_v2`` with ``NVML_MOCK_PROFILE``
naming the document answers ``ERROR_UNKNOWN`` and prints the reason on stderr when it refuses.
"""

from __future__ import annotations

import copy
import ctypes
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.api.errors import ConfigError
from computedomain.nvml import fake, hardware
from computedomain.nvml.types import NVML_ERROR_UNKNOWN, NVML_SUCCESS

GB200: dict[str, Any] = json.loads(fake.Profile.GB200.path.read_text())

Verdict = Callable[[str | bytes], str | None]


def test_every_profile_has_a_document_and_round_trips() -> None:
    files = {p.stem for p in hardware.PROFILES_DIR.glob("*.json")}
    assert files == {p.value for p in fake.Profile}
    for profile in fake.Profile:
        text = profile.path.read_text()
        assert hardware.dumps(hardware.loads(text)) == text
        # The stored document is the profile on DEFAULT_CLIQUE, GPU UUIDs included.
        assert hardware.dumps(fake.document(profile)) == text


def test_document_moves_to_another_rack() -> None:
    doc = fake.document(fake.Profile.MIXED_CLIQUES, "3f1b8e2a-5c4d-4e6f-9a0b-1c2d3e4f5a6b.7")
    cliques = [g.fabric.clique for g in doc.gpus if g.fabric is not None]
    assert (
        cliques
        == ["3f1b8e2a-5c4d-4e6f-9a0b-1c2d3e4f5a6b.7"] * 2
        + ["3f1b8e2a-5c4d-4e6f-9a0b-1c2d3e4f5a6b.8"] * 2
    )
    stored = fake.document(fake.Profile.MIXED_CLIQUES)
    assert not {g.uuid for g in doc.gpus} & {g.uuid for g in stored.gpus}


@pytest.fixture
def c_verdict(
    mock_library: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> Verdict:
    """``verdict(text)``: None when the C reader accepts the document, else its message."""
    library = ctypes.CDLL(str(mock_library))
    path = tmp_path / "doc.json"
    monkeypatch.setenv("NVML_MOCK_PROFILE", str(path))
    prefix = f"nvml-mock: profile {path} (NVML_MOCK_PROFILE): "

    def verdict(text: str | bytes) -> str | None:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        capfd.readouterr()
        code = library.nvmlInit_v2()
        if code == NVML_SUCCESS:
            assert library.nvmlShutdown() == NVML_SUCCESS
            return None
        assert code == NVML_ERROR_UNKNOWN
        err = capfd.readouterr().err
        assert err.startswith(prefix), err
        assert err.endswith("\n"), err
        return err[len(prefix) : -1]

    return verdict


def python_verdict(text: str | bytes) -> str | None:
    try:
        hardware.loads(hardware.decode(text) if isinstance(text, bytes) else text)
    except ConfigError as exc:
        return str(exc)
    return None


def mutated(path: tuple[str | int, ...], value: object) -> str:
    doc = copy.deepcopy(GB200)
    target: Any = doc
    for step in path[:-1]:
        target = target[step]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps(doc, ensure_ascii=False)


_DELETE = object()

BAD = [
    ((), [1], "document: must be an object"),
    (("extra",), 1, 'document: unknown member "extra"'),
    (("driverVersion",), _DELETE, "driverVersion: is required"),
    (("driverVersion",), "", "driverVersion: must be 1 to 79 characters long (got 0)"),
    (("driverVersion",), "5" * 80, "driverVersion: must be 1 to 79 characters long (got 80)"),
    (
        ("cudaDriverVersion",),
        "13000",
        "cudaDriverVersion: must be an integer from 0 to 2147483647 (got a string)",
    ),
    (
        ("cudaDriverVersion",),
        -1,
        "cudaDriverVersion: must be an integer from 0 to 2147483647 (got -1)",
    ),
    (("initReturn",), True, "initReturn: must be an integer from 0 to 4294967295 (got a boolean)"),
    (("fabricInfoVersions",), [3, 4], "fabricInfoVersions: item 1: must be 2 or 3"),
    (("fabricInfoVersions",), [3, 3], "fabricInfoVersions: item 1: listed twice"),
    (("gpus",), {}, "gpus: must be an array"),
    (("gpus",), [None], "gpus[0]: must be an object"),
    (
        ("gpus", 1, "uuid"),
        "GPU-XYZ",
        'gpus[1].uuid: must be "GPU-" and a lowercase UUID (got "GPU-XYZ")',
    ),
    (("gpus", 1, "uuid"), GB200["gpus"][0]["uuid"], "gpus[1].uuid: repeats the UUID of gpus[0]"),
    (
        ("gpus", 2, "pciBusId"),
        "0:1:0.0",
        'gpus[2].pciBusId: must look like "00000008:01:00.0" (got "0:1:0.0")',
    ),
    (
        ("gpus", 2, "pciBusId"),
        "00000008:01:00.0",
        "gpus[2].pciBusId: repeats the bus ID of gpus[0]",
    ),
    (
        ("gpus", 0, "pciDeviceId"),
        "0x123456789",
        'gpus[0].pciDeviceId: must be "0x" and 1 to 8 hex digits (got "0x123456789")',
    ),
    (
        ("gpus", 0, "cudaComputeCapability"),
        [10],
        "gpus[0].cudaComputeCapability: must be [major, minor], integers from 0 to 1000",
    ),
    (("gpus", 0, "fabric"), _DELETE, "gpus[0].fabric: is required"),
    (
        ("gpus", 0, "fabric", "state"),
        256,
        "gpus[0].fabric.state: must be an integer from 0 to 255 (got 256)",
    ),
    (
        ("gpus", 0, "fabric", "clusterUuid"),
        "7C1F3A52-9D0E-4B6A-8F21-3E5D9C0B4A17",
        "gpus[0].fabric.clusterUuid: must be a lowercase UUID like "
        '"7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17"',
    ),
    (
        ("gpus", 0, "fabric", "return"),
        3,
        'gpus[0].fabric: "clusterUuid" is not allowed when '
        '"return" is not 0 (the call fails, so it fills nothing)',
    ),
    (("gpus", 0, "fabric", "health"), 1, 'gpus[0].fabric: unknown member "health"'),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[m.split(":")[0] for *_, m in BAD])
def test_both_readers_refuse_with_the_same_message(
    c_verdict: Verdict, path: tuple[str | int, ...], value: object, message: str
) -> None:
    text = json.dumps(value) if path == () else mutated(path, value)
    assert python_verdict(text) == message
    assert c_verdict(text) == message


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        '{"a": 1,}',
        '{"a": 01}',
        '{"a": 1.5}',
        '{"a": "\\u0000"}',
        '{"a": 1} x',
        '{"a": 1, "a": 2}',
        '{"a": "\\ud800"}',
        "[" * 40 + "]" * 40,
        '{"a": "\x01"}',
    ],
)
def test_invalid_json_is_refused_by_both(c_verdict: Verdict, text: str) -> None:
    c_message = c_verdict(text)
    assert c_message is not None
    assert c_message.startswith("not valid JSON: line 1, column ")
    assert python_verdict(text) is not None


def test_both_readers_accept_every_profile(c_verdict: Verdict) -> None:
    for profile in fake.Profile:
        text = profile.path.read_text()
        assert c_verdict(text) is None
        assert python_verdict(text) is None


# Any JSON value but floats and NUL characters (the C reader's JSON layer alone refuses both),
# written as UTF-8 (json.dumps would escape characters past U+FFFF as surrogate pairs, which the C
# reader does not decode).
_TEXT = st.text(st.characters(min_codepoint=1, exclude_categories=["Cs"]))
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


_ALL_PATHS = _paths(GB200)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(_ALL_PATHS),
    value=_VALUES | st.just(_DELETE) | st.sampled_from([2, 3, "0x10DE", "GPU-"]),
)
def test_readers_agree_on_any_one_field_change(
    c_verdict: Verdict, path: tuple[str | int, ...], value: object
) -> None:
    text = mutated(path, value)
    assert c_verdict(text) == python_verdict(text)


def test_every_truncated_profile_is_refused_by_both(c_verdict: Verdict) -> None:
    text = fake.Profile.MIXED_CLIQUES.path.read_text().rstrip()
    for end in range(0, len(text), 3):
        assert c_verdict(text[:end]) is not None
        assert python_verdict(text[:end]) is not None


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | st.builds(lambda b: b"{" + b, st.binary(max_size=300)))
def test_any_bytes_are_refused_with_a_message(c_verdict: Verdict, blob: bytes) -> None:
    message = c_verdict(blob)
    assert message is not None
    field, _, reason = message.partition(": ")  # one line: what is wrong, then why
    assert field
    assert reason
    assert python_verdict(blob) is not None


@pytest.mark.parametrize(
    "blob",
    [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xf0\x9f\x98"],
    ids=["invalid byte", "overlong", "surrogate", "past U+10FFFF", "cut short", "cut short 4"],
)
def test_text_that_is_not_utf8_is_refused_by_both(c_verdict: Verdict, blob: bytes) -> None:
    text = mutated(("description",), "x").encode().replace(b'"x"', b'"' + blob + b'"')
    assert c_verdict(text) == python_verdict(text) == "not valid JSON: not UTF-8 text"
    fine = text.replace(blob, "é€😀".encode())
    assert c_verdict(fine) is python_verdict(fine) is None
