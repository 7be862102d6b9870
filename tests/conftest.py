"""Shared pytest configuration for every test layer."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from computedomain_sim.apiserver import testing

# Properties hold or fail regardless of how busy the machine is: no per-example deadline and
# no "too slow" health check (CI runs on two loaded cores). Explicit @settings still win.
settings.register_profile(
    "computedomain", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("computedomain")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--control-plane",
        choices=["embedded", "kube"],
        default="embedded",
        help="the control plane of the simulated clusters of the end-to-end scenarios and the "
        "cluster fault runs: the embedded one, or the real one of `make kube-bins` (what "
        "`make test-kube` runs)",
    )
    parser.addoption(
        "--conformance-record",
        action="store_true",
        help="with --control-plane=kube: write what kube-apiserver answers to each case of "
        "tests/conformance into its golden.json instead of comparing (`make conformance-record`)",
    )


@pytest.fixture(scope="session")
def control_plane(pytestconfig: pytest.Config) -> str:
    """The simulated clusters' control plane (``--control-plane``): ``embedded`` or ``kube``."""
    return str(pytestconfig.getoption("control_plane"))


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    """A running embedded API server (one per test module), with a kubeconfig."""
    directory = tmp_path_factory.mktemp("apiserver")
    with testing.running(directory) as running:
        yield running


@pytest.fixture(scope="module")
def api_client(apiserver: testing.RunningServer) -> Iterator[object]:
    """A ``kubernetes.client.ApiClient`` (admin) for the module's server."""
    client = apiserver.api_client()
    yield client
    client.close()


@pytest.fixture
def namespace(apiserver: testing.RunningServer, api_client: object) -> Iterator[str]:
    """A fresh namespace for one test (deleted afterwards)."""
    from kubernetes import client

    name = testing.unique_name("ns")
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    with contextlib.suppress(client.ApiException):
        core.delete_namespace(name)


CRD_FIXTURES = Path(__file__).parent / "integration" / "apiserver" / "crds"
