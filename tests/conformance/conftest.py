"""One cluster for the whole corpus (``sim up``, one node, no driver installed) on the control
plane of ``--control-plane``, and the :class:`.runner.Runner` over it. Under
``--conformance-record`` the results are collected and written to ``golden.json`` when the
session's corpus is done."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import kit

from . import corpus
from .runner import Runner


@pytest.fixture(scope="session")
def control_plane(pytestconfig: pytest.Config) -> str:
    """The control plane the corpus runs on (``--control-plane``): ``embedded`` or ``kube``."""
    return str(pytestconfig.getoption("control_plane"))


@pytest.fixture(scope="session")
def conformance_cluster(
    tmp_path_factory: pytest.TempPathFactory, control_plane: str
) -> Iterator[kit.Cluster]:
    with kit.module_cluster(
        tmp_path_factory,
        "conformance",
        racks=1,
        nodes_per_rack=1,
        extra_args=["--manifests=none", "--no-wait-components"],
        control_plane=control_plane,
    ) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def recording(pytestconfig: pytest.Config, control_plane: str) -> Iterator[dict[str, Any] | None]:
    """The results to record (None when comparing)."""
    if not pytestconfig.getoption("conformance_record"):
        yield None
        return
    if control_plane != "kube":
        pytest.fail("--conformance-record records kube-apiserver: add --control-plane=kube")
    results: dict[str, Any] = {}
    yield results
    corpus.write_golden(results)


@pytest.fixture(scope="session")
def runner(
    conformance_cluster: kit.Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runner]:
    running = Runner(conformance_cluster.kubeconfig, tmp_path_factory.mktemp("conformance-runner"))
    yield running
    running.close()
