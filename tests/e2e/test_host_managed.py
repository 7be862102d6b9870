"""Host-managed IMEX end to end (docs/compatibility.md#host-managed-imex-daemons): the cluster
runs with the ``host-managed-imex`` component and a host ``nvidia-imex`` stand-in per node that
starts NOT ready (``sim up --host-imex=not-ready``). A domain is Ready at once with no daemon
DaemonSet; a worker's channel claim waits, and the user sees why: a Warning event on the worker
and the domain's Ready condition name the host daemon. Once the node's host daemon answers
READY, the worker runs with IMEX channel 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain_sim.imex import host

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("host-managed"),
    pytest.mark.timeout(300),
]

NODE = "r0n0"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kit.Cluster]:
    root = tmp_path_factory.mktemp("host-managed")
    manifests = kit_extra.overlay(root / "overlay", components=["host-managed-imex"])
    with kit.module_cluster(
        tmp_path_factory,
        "host-managed-sim",
        racks=1,
        nodes_per_rack=2,
        extra_args=[f"--manifests={manifests}", "--host-imex=not-ready"],
    ) as started:
        yield started


async def test_worker_gets_its_channel_once_the_host_daemon_is_ready(
    cluster: kit.Cluster,
) -> None:
    async with kit.api_of(cluster) as api:
        slices, _ = await api.list_all(resources.RESOURCE_SLICES)
        published = {d["name"] for s in slices for d in s["spec"].get("devices") or ()}
        assert published == {"channel-0"}

        ns = await kit.create_namespace(api, "hostimex")
        domain = await kit.create_domain(api, ns, "job", num_nodes=2, allocation_mode="All")
        uid = domain["metadata"]["uid"]
        await kit.domain_ready(api, cluster, ns, "job")
        template = await api.get(resources.RESOURCE_CLAIM_TEMPLATES, "job-channel", ns)
        (config,) = template["spec"]["spec"]["devices"]["config"]
        assert config["opaque"]["parameters"]["allocationMode"] == "Single"
        await kit.create_worker(api, ns, "job", NODE, name="w0")

        async def warning() -> dict[str, object] | None:
            for event in await kit.events_about(api, ns, "Pod", "w0"):
                if event.get("type") == "Warning" and "host's nvidia-imex daemon" in str(
                    event.get("message")
                ):
                    return event
            return None

        event = await kit.eventually(
            warning,
            what="a Warning event on the worker naming the host daemon",
            explain=lambda: kit.doctor_text(cluster, ns, "job"),
        )
        assert "UNAVAILABLE" in str(event["message"])

        async def condition_names_it() -> dict[str, str] | None:
            got = await api.get(resources.COMPUTE_DOMAINS, "job", ns)
            condition = kit.ready_condition(got)
            if condition.get("status") == "False" and NODE in condition.get("message", ""):
                return condition
            return None

        condition = await kit.eventually(
            condition_names_it, what="the Ready condition naming the host daemon"
        )
        assert condition["reason"] == "HostIMEXDaemonNotReady"
        assert "host nvidia-imex daemon not ready" in condition["message"]
        got = await api.get(resources.COMPUTE_DOMAINS, "job", ns)
        assert got["status"]["status"] == "Ready"  # upstream's constant, kept
        doctor = await kit.doctor_text(cluster, ns, "job")
        assert f"[HostIMEXNotReady] Node {NODE}: host nvidia-imex daemon not ready" in doctor
        pod = await api.get(resources.PODS, "w0", ns)
        assert pod["status"].get("phase") != "Running"
        daemon_sets, _ = await api.list_all(resources.DAEMON_SETS, kit.DRIVER_NAMESPACE)
        assert not [d for d in daemon_sets if uid in d["metadata"]["name"]]
        node = await api.get(resources.NODES, NODE)
        assert names.COMPUTE_DOMAIN_LABEL not in (node["metadata"].get("labels") or {})

        # The host's daemon gets ready: the worker runs with channel 0, the condition clears.
        (cluster.node_root(NODE) / host.NOT_READY_MARKER).unlink()
        (worker,) = await kit.pods_running(
            api, cluster, ns, selector="app=w0", count=1, domain="job"
        )

        async def printed() -> dict[str, object] | None:
            return kit.worker_report(cluster, worker)

        report = await kit.eventually(printed, what="the worker's report of its channels")
        assert report["channels"] == ["channel0"]

        async def condition_clear() -> dict[str, str] | None:
            got = await api.get(resources.COMPUTE_DOMAINS, "job", ns)
            condition = kit.ready_condition(got)
            return condition if condition.get("status") == "True" else None

        await kit.eventually(condition_clear, what="the Ready condition True again")
        await api.delete(resources.PODS, "w0", ns)
        await kit.gone(api, resources.PODS, "w0", ns)
        await api.delete(resources.COMPUTE_DOMAINS, "job", ns)
        await kit.gone(api, resources.COMPUTE_DOMAINS, "job", ns)
        assert cluster.leftovers(NODE).empty
