"""Fixtures for the kube layer's integration tests: our Api pointed at the embedded server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain_sim.apiserver import testing

CRDS = Path(__file__).resolve().parents[3] / "deployments" / "base" / "crds"


@pytest.fixture(scope="module")
def crds(apiserver: testing.RunningServer) -> None:
    """The ComputeDomain CRDs, installed once per module."""
    apiserver.install_crds([CRDS])


@pytest.fixture
async def api(apiserver: testing.RunningServer) -> AsyncIterator[Api]:
    """An Api (admin token, no client-side rate limit) for the module's server."""
    client = await connect(
        ClientConfig(url=apiserver.url, token=apiserver.token, qps=0, field_manager="kube-tests")
    )
    try:
        yield client
    finally:
        await client.close()
