"""Clique discovery over the fake NVML profiles and hand-made GPU states (strict and legacy)."""

from __future__ import annotations

import uuid

import pytest

from computedomain.nvml import clique, fake
from computedomain.nvml.types import (
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_UNKNOWN,
    NVML_SUCCESS,
    ZERO_UUID,
    FabricInfo,
    FabricState,
    Gpu,
)

RACK = "3f1b8e2a-5c4d-4e6f-9a0b-1c2d3e4f5a6b.7"
CLUSTER = uuid.UUID("3f1b8e2a-5c4d-4e6f-9a0b-1c2d3e4f5a6b")

# (profile, strict) -> expected clique ID, or the start of the CliqueError message.
PROFILE_CASES = [
    (fake.Profile.GB200, True, RACK),
    (fake.Profile.GB200, False, RACK),
    (fake.Profile.H100, True, ""),
    (fake.Profile.H100, False, ""),
    (fake.Profile.FABRIC_IN_PROGRESS, True, clique.CliqueError("NVLink fabric not attached")),
    (fake.Profile.FABRIC_IN_PROGRESS, False, ""),
    (fake.Profile.FABRIC_FAILURE, True, clique.CliqueError("NVLink fabric registration error")),
    (fake.Profile.FABRIC_FAILURE, False, ""),
    (fake.Profile.MIXED_CLIQUES, True, clique.CliqueError("the GPUs of this node disagree")),
    (fake.Profile.MIXED_CLIQUES, False, clique.CliqueError("the GPUs of this node disagree")),
    (fake.Profile.HGX_H100_PARTITION_PENDING, True, clique.CliqueError("state IN_PROGRESS")),
    (fake.Profile.HGX_H100_PARTITION_PENDING, False, ""),
    (fake.Profile.HGX_B200_PARTITION_PENDING, True, clique.CliqueError("state NOT_STARTED")),
    (fake.Profile.HGX_B200_PARTITION_PENDING, False, ""),
]


@pytest.mark.parametrize(
    ("profile", "strict", "expected"),
    PROFILE_CASES,
    ids=[f"{p}-{'strict' if s else 'legacy'}" for p, s, _ in PROFILE_CASES],
)
def test_profiles(profile: fake.Profile, strict: bool, expected: object) -> None:
    gpus = fake.FakeNvml(profile=profile, clique=RACK).gpus()
    if isinstance(expected, Exception):
        with pytest.raises(clique.CliqueError, match=str(expected)):
            clique.discover(gpus, strict=strict)
    else:
        assert clique.discover(gpus, strict=strict) == expected


def test_mixed_cliques_message_names_each_gpu() -> None:
    gpus = fake.FakeNvml(profile=fake.Profile.MIXED_CLIQUES, clique=RACK).gpus()
    with pytest.raises(clique.CliqueError) as err:
        clique.discover(gpus, strict=True)
    assert f"GPU 0: {RACK}" in str(err.value)
    assert "GPU 3: 3f1b8e2a-5c4d-4e6f-9a0b-1c2d3e4f5a6b.8" in str(err.value)


def _gpu(
    index: int = 0,
    *,
    name: str = "NVIDIA GB200",
    ret: int = NVML_SUCCESS,
    state: int = FabricState.COMPLETED,
    status: int = NVML_SUCCESS,
    cluster: uuid.UUID = CLUSTER,
    clique_id: int = 7,
) -> Gpu:
    info = None
    if ret == NVML_SUCCESS:
        info = FabricInfo(cluster_uuid=cluster, clique_id=clique_id, state=state, status=status)
    return Gpu(index=index, name=name, uuid=f"GPU-{index}", fabric_return=ret, fabric=info)


OK, ERR = "ok", "error"
# case -> mode -> (OK, clique ID) or (ERR, pattern of the CliqueError message)
EDGE_CASES: dict[str, tuple[list[Gpu], dict[str, tuple[str, str]]]] = {
    "no-gpus": ([], {"strict": (OK, ""), "legacy": (OK, "")}),
    "display-device-skipped": (
        [_gpu(0, name="NVIDIA DGX Display", state=FabricState.IN_PROGRESS), _gpu(1)],
        {"strict": (OK, RACK), "legacy": (OK, RACK)},
    ),
    "state-not-supported": (
        [_gpu(0, state=FabricState.NOT_SUPPORTED)],
        {"strict": (OK, ""), "legacy": (OK, "")},
    ),
    "zero-cluster-uuid": (
        [_gpu(0, cluster=ZERO_UUID)],
        {"strict": (OK, ""), "legacy": (OK, "")},
    ),
    "registration-failed": (
        [_gpu(0, status=NVML_ERROR_UNKNOWN)],
        {"strict": (ERR, "NVLink fabric registration error"), "legacy": (OK, "")},
    ),
    "not-started": (
        [_gpu(0, state=FabricState.NOT_STARTED)],
        {"strict": (ERR, "registration state NOT_STARTED"), "legacy": (OK, "")},
    ),
    "query-error": (
        [_gpu(0, ret=NVML_ERROR_UNKNOWN)],
        {"strict": (ERR, "ERROR_UNKNOWN"), "legacy": (ERR, "ERROR_UNKNOWN")},
    ),
    "query-not-supported-on-one": (
        [_gpu(0, ret=NVML_ERROR_NOT_SUPPORTED), _gpu(1)],
        {"strict": (OK, RACK), "legacy": (OK, RACK)},
    ),
    "cluster-uuid-disagrees": (
        [_gpu(0), _gpu(1, cluster=uuid.UUID(int=5))],
        {"strict": (ERR, "disagree"), "legacy": (ERR, "disagree")},
    ),
    "clique-zero-is-a-clique": (
        [_gpu(0, clique_id=0)],
        {"strict": (OK, f"{CLUSTER}.0"), "legacy": (OK, f"{CLUSTER}.0")},
    ),
}


@pytest.mark.parametrize("mode", ["strict", "legacy"])
@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_edge_cases(case: str, mode: str) -> None:
    gpus, expected = EDGE_CASES[case]
    kind, want = expected[mode]
    if kind == OK:
        assert clique.discover(gpus, strict=mode == "strict") == want
    else:
        with pytest.raises(clique.CliqueError, match=want):
            clique.discover(gpus, strict=mode == "strict")


def test_cluster_uuid_is_lowercase_canonical() -> None:
    upper = uuid.UUID("ABCDEF01-2345-6789-ABCD-EF0123456789")
    assert clique.discover([_gpu(0, cluster=upper, clique_id=32766)], strict=True) == (
        "abcdef01-2345-6789-abcd-ef0123456789.32766"
    )


# Strict mode with skip_incomplete (FabricManagerPartitioning on a single-node NVLink system).
SKIP_CASES = {
    "in-progress-skipped": ([_gpu(0, state=FabricState.IN_PROGRESS)], ""),
    "not-started-skipped": ([_gpu(0, state=FabricState.NOT_STARTED)], ""),
    "unknown-state-skipped": ([_gpu(0, state=7)], ""),
    "completed-one-still-counts": ([_gpu(0, state=FabricState.IN_PROGRESS), _gpu(1)], RACK),
    "zero-uuid-completed-skipped": ([_gpu(0, cluster=ZERO_UUID)], ""),
}


@pytest.mark.parametrize("case", sorted(SKIP_CASES))
def test_skip_incomplete_skips_unfinished_registrations(case: str) -> None:
    gpus, want = SKIP_CASES[case]
    assert clique.discover(gpus, strict=True, skip_incomplete=True) == want


@pytest.mark.parametrize(
    ("gpus", "pattern"),
    [
        ([_gpu(0, status=NVML_ERROR_UNKNOWN)], "registration error"),
        ([_gpu(0, ret=NVML_ERROR_UNKNOWN)], "ERROR_UNKNOWN"),
        ([_gpu(0), _gpu(1, cluster=uuid.UUID(int=5))], "disagree"),
    ],
    ids=["completed-with-error", "query-error", "disagreement"],
)
def test_skip_incomplete_keeps_every_other_refusal(gpus: list[Gpu], pattern: str) -> None:
    with pytest.raises(clique.CliqueError, match=pattern):
        clique.discover(gpus, strict=True, skip_incomplete=True)


def test_incomplete_names_exactly_the_gpus_skip_incomplete_skips() -> None:
    gpus = [
        _gpu(0, state=FabricState.IN_PROGRESS),
        _gpu(1),
        _gpu(2, state=FabricState.NOT_SUPPORTED),
        _gpu(3, ret=NVML_ERROR_NOT_SUPPORTED),
        _gpu(4, name="NVIDIA DGX Display", state=FabricState.NOT_STARTED),
        _gpu(5, state=FabricState.NOT_STARTED),
    ]
    assert [g.index for g in clique.incomplete(gpus)] == [0, 5]


@pytest.mark.parametrize(
    "profile",
    [fake.Profile.HGX_H100_PARTITION_PENDING, fake.Profile.HGX_B200_PARTITION_PENDING],
    ids=str,
)
def test_partition_pending_profiles_have_no_clique_when_skipped(profile: fake.Profile) -> None:
    gpus = fake.FakeNvml(profile=profile, clique=RACK).gpus()
    assert len(clique.incomplete(gpus)) == len(gpus) == 8
    assert clique.discover(gpus, strict=True, skip_incomplete=True) == ""
