"""The three example plugins (``plugins/``) on the simulated cluster, each doing what its README
promises, observed through the API and the nodes' files.

One cluster (one rack of three nodes, so one clique) is installed with the simulation's
manifests plus an overlay that selects every plugin the way an operator would: on the
controller Deployment ``INDEX_POLICY=stable-hash``, ``DNS_NAME_POLICY=suffix`` and
``CD_DAEMON_POLICY_ENV=CD_DNS_SUFFIX=...`` (the controller renders them into each domain's
daemon DaemonSet), and on the kubelet plugin DaemonSet ``CHANNEL_STRATEGY_MAP=Single=per-domain``.
The plugins are loaded through their entry points by the programs the cluster runs.

One scenario (run once for the module, its observations checked by one test per plugin):

1. domain ``a``: workers on r0n0 and r0n1 at once (both nodes hash to home index 8, so the
   second daemon to register probes to 9; lowest-free would give 0 and 1); that node's worker
   leaves (its daemon deregisters), a worker on r0n2 joins (home 10; lowest-free would hand it
   the freed index), and the node rejoins: stable-hash gives it 9 again (lowest-free: 2);
2. the daemons' nodes.cfg and hosts files name the peers ``compute-domain-daemon-NNNN.<suffix>``;
3. every worker of ``a`` sees one channel device, ``a``'s home channel (not channel 0), on each
   node; while the node rejoins, ``a`` leaves r0n2 and domain ``b`` there sees its own home
   channel.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from computedomain_channels_per_domain import home_channel
from computedomain_index_stablehash import home_index

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.errors import NotFound
from computedomain.kube.rest import Api
from computedomain_sim.cluster.layout import StateLayout
from tests.support.polling import eventually

from .conftest import run_cli

# The first test also pays for the module's cluster and scenario: allow for a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("plugins-sim"), pytest.mark.timeout(420)]

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 60.0
SUFFIX = "imex.plugins.test"
NS = "tenants"
LIMIT = names.DEFAULT_MAX_NODES_PER_IMEX_DOMAIN

OVERLAY = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - {base}
patches:
  - target:
      kind: Deployment
      name: computedomain-controller
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {{name: INDEX_POLICY, value: stable-hash}}
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {{name: DNS_NAME_POLICY, value: suffix}}
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {{name: CD_DAEMON_POLICY_ENV, value: "CD_DNS_SUFFIX={suffix}"}}
  - target:
      kind: DaemonSet
      name: computedomain-kubelet-plugin
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {{name: CHANNEL_STRATEGY_MAP, value: Single=per-domain}}
"""

# The worker prints the IMEX channel devices it was given, then idles.
WORKER = (
    "import os, time\n"
    "d = os.environ.get('CD_SIM_DEV_DIR', '/dev') + '/nvidia-caps-imex-channels'\n"
    "print('CHANNELS', ' '.join(sorted(os.listdir(d))), flush=True)\n"
    "time.sleep(600)\n"
)


@attrs.frozen
class Observed:
    """What the scenario saw."""

    # node -> index, at each step of the join/leave/rejoin history
    first_two: dict[str, int]
    prober: str  # the one of r0n0, r0n1 that joined second and probed past their shared home
    before_rejoin: dict[str, int]
    after_rejoin: dict[str, int]
    nodes_cfg: str
    hosts: str
    domain_a: str
    channels_a: dict[str, list[str]]  # worker's node ("again": the rejoin) -> its devices
    domain_b: str
    channels_b: list[str]


async def _domain(api: Api, name: str) -> str:
    body = {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": f"{name}-ch"}}},
    }
    return str((await api.create(resources.COMPUTE_DOMAINS, body, NS))["metadata"]["uid"])


async def _worker(api: Api, domain: str, node: str, name: str) -> None:
    body = {
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "python",
                    "command": ["python3", "-c", WORKER],
                    "resources": {"claims": [{"name": "imex"}]},
                }
            ],
            "resourceClaims": [{"name": "imex", "resourceClaimTemplateName": f"{domain}-ch"}],
        },
    }
    await api.create(resources.PODS, body, NS)


async def _running(api: Api, name: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        pod = await api.get(resources.PODS, name, NS)
        return pod if (pod.get("status") or {}).get("phase") == "Running" else None

    result: dict[str, Any] = await eventually(
        probe, what=f"pod {name} Running", within=DEADLINE, every=0.2
    )
    return result


async def _gone(api: Api, name: str) -> None:
    await api.delete(resources.PODS, name, NS, grace_period_seconds=0)

    async def probe() -> bool:
        try:
            await api.get(resources.PODS, name, NS)
        except NotFound:
            return True
        return False

    await eventually(probe, what=f"pod {name} deleted", within=DEADLINE, every=0.2)


async def _indices(api: Api, domain: str, nodes: set[str]) -> dict[str, int]:
    """The domain's status once it lists exactly ``nodes``: node -> index."""

    async def probe() -> dict[str, int] | None:
        cd = await api.get(resources.COMPUTE_DOMAINS, domain, NS)
        entries = (cd.get("status") or {}).get("nodes") or []
        found = {str(e["name"]): int(e.get("index", 0)) for e in entries}
        return found if set(found) == nodes else None

    result: dict[str, int] = await eventually(
        probe, what=f"{domain}'s status.nodes == {sorted(nodes)}", within=DEADLINE, every=0.2
    )
    return result


def _channels(layout: StateLayout, node: str, pod: dict[str, Any]) -> list[str]:
    meta = pod["metadata"]
    log = (
        layout.node_root(node)
        / "var/log/pods"
        / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"
        / "main"
        / "0.log"
    )
    found = re.search(r"CHANNELS ?(.*)", log.read_text() if log.exists() else "")
    assert found, f"{meta['name']} did not print its channels ({log})"
    return found.group(1).split()


async def _printed(layout: StateLayout, node: str, pod: dict[str, Any]) -> list[str]:
    async def probe() -> list[str] | None:
        try:
            return _channels(layout, node, pod)
        except AssertionError:
            return None

    result: list[str] = await eventually(
        probe, what=f"{pod['metadata']['name']} printed its channels", within=DEADLINE, every=0.2
    )
    return result


def _daemon_file(layout: StateLayout, node: str, pattern: str, needle: str) -> str:
    for path in layout.node_root(node).rglob(pattern):
        text = path.read_text(errors="replace") if path.is_file() else ""
        if needle in text:
            return text
    return ""


async def _scenario(kubeconfig: Path, layout: StateLayout) -> Observed:
    api = await connect(ClientConfig(kubeconfig=str(kubeconfig)))
    try:
        await api.create(resources.NAMESPACES, {"metadata": {"name": NS}})
        uid_a = await _domain(api, "a")
        for node in ("r0n0", "r0n1"):  # both hash to home 8: whichever comes second probes
            await _worker(api, "a", node, f"a-{node}")
        pods = dict(
            zip(
                ("r0n0", "r0n1"),
                await asyncio.gather(*(_running(api, f"a-{n}") for n in ("r0n0", "r0n1"))),
                strict=True,
            )
        )
        first_two = await _indices(api, "a", {"r0n0", "r0n1"})
        prober = max(first_two, key=first_two.__getitem__)
        stayer = min(first_two, key=first_two.__getitem__)
        needle = f"compute-domain-daemon-{first_two[prober]:04d}"

        async def cfg() -> str:
            return _daemon_file(layout, stayer, "nodes.cfg", needle)

        async def hosts() -> str:
            return _daemon_file(layout, stayer, "*hosts*", needle)

        nodes_cfg, hosts_text = (
            await eventually(cfg, what="nodes.cfg", within=DEADLINE, every=0.2),
            await eventually(hosts, what="hosts", within=DEADLINE, every=0.2),
        )
        channels_a = {n: await _printed(layout, n, p) for n, p in pods.items()}

        await _gone(api, f"a-{prober}")  # the prober leaves ...
        await _indices(api, "a", {stayer})
        await _worker(api, "a", "r0n2", "a-r0n2")  # ... r0n2 joins ...
        channels_a["r0n2"] = await _printed(layout, "r0n2", await _running(api, "a-r0n2"))
        before_rejoin = await _indices(api, "a", {stayer, "r0n2"})
        # The prober comes back while a leaves r0n2, where b is the next domain.
        await _worker(api, "a", prober, "a-again")
        await _gone(api, "a-r0n2")
        uid_b = await _domain(api, "b")
        await _worker(api, "b", "r0n2", "b-worker")
        again, b_worker = await asyncio.gather(_running(api, "a-again"), _running(api, "b-worker"))
        after_rejoin = await _indices(api, "a", {stayer, prober})
        channels_a["again"] = await _printed(layout, prober, again)
        channels_b = await _printed(layout, "r0n2", b_worker)
        return Observed(
            first_two=first_two,
            prober=prober,
            before_rejoin=before_rejoin,
            after_rejoin=after_rejoin,
            nodes_cfg=nodes_cfg,
            hosts=hosts_text,
            domain_a=uid_a,
            channels_a=channels_a,
            domain_b=uid_b,
            channels_b=channels_b,
        )
    finally:
        await api.close()


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    root = tmp_path_factory.mktemp("plugins-sim")
    overlay = root / "overlay"
    overlay.mkdir()
    base = os.path.relpath(REPO / "deployments" / "overlays" / "sim", overlay)
    (overlay / "kustomization.yaml").write_text(OVERLAY.format(base=base, suffix=SUFFIX))
    state = root / "sim"
    result = run_cli(
        "up", f"--state-dir={state}", "--racks=1", "--nodes-per-rack=3", "--timeout=120",
        f"--manifests={overlay}", check=False, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    try:
        kubeconfig = Path(result.stdout.strip().splitlines()[-1])
        yield asyncio.run(_scenario(kubeconfig, StateLayout(state)))
    finally:
        run_cli("down", f"--state-dir={state}", check=False)


def test_stable_hash_indices_start_at_home_probe_on_and_survive_leave_and_rejoin(
    observed: Observed,
) -> None:
    # r0n0 and r0n1 share the home index 8; r0n2's is 10 (lowest-free: 0, 1, then 1 and 2)
    assert home_index("r0n0", LIMIT) == home_index("r0n1", LIMIT) == 8
    assert home_index("r0n2", LIMIT) == 10
    stayer = ({"r0n0", "r0n1"} - {observed.prober}).pop()
    assert observed.first_two == {stayer: 8, observed.prober: 9}
    assert observed.before_rejoin == {stayer: 8, "r0n2": 10}  # the prober's index stayed free
    assert observed.after_rejoin == {stayer: 8, observed.prober: 9}  # its own index again


def test_dns_suffix_names_the_daemons_in_nodes_cfg_and_the_hosts_file(
    observed: Observed,
) -> None:
    expected = {f"compute-domain-daemon-{i:04d}.{SUFFIX}" for i in (8, 9)}
    cfg_names = set(observed.nodes_cfg.split())
    assert expected <= cfg_names
    assert not {n for n in cfg_names if n.startswith("compute-domain-daemon")} - {
        f"compute-domain-daemon-{i:04d}.{SUFFIX}" for i in range(LIMIT)
    }
    host_names = {w for w in observed.hosts.split() if w.startswith("compute-domain-daemon")}
    assert expected <= host_names
    assert all(name.endswith(f".{SUFFIX}") for name in host_names)


def test_per_domain_gives_each_domain_its_home_channel_on_every_node(observed: Observed) -> None:
    home_a = home_channel(observed.domain_a, names.IMEX_CHANNEL_COUNT)
    home_b = home_channel(observed.domain_b, names.IMEX_CHANNEL_COUNT)
    for node, devices in observed.channels_a.items():
        assert devices == [f"channel{home_a}"], node  # the same on every node, never 0
    assert observed.channels_b == [f"channel{home_b}"]  # Single would give both channel0
    if home_a != home_b:  # two random UIDs share a home once in 2047 draws
        assert observed.channels_b != observed.channels_a["r0n2"]
