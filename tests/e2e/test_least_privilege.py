"""Least privilege, proven: the components run a representative workload under enforced RBAC
with the roles of ``deployments/base/rbac-*.yaml``, while the API server records which rule
allowed each of their requests (``sim up --rbac-usage``, :mod:`computedomain_sim.apiserver.
rbac_usage`). Then:

- nothing they needed was missing: no request of theirs was denied, and no component log
  mentions a 403 / Forbidden;
- every rule of ``deployments/`` that no component used is printed, and each must carry a
  justification comment (``# least-privilege: <why>``) right above it in the YAML (a path the
  workload does not exercise, such as an error path).

On the real control plane (``--control-plane=kube``) the components run under the same roles
with kube-apiserver's Node and RBAC authorizers, and the record is its audit log
(:mod:`computedomain_sim.controlplane.audit`): "nothing was denied" is the real authorizer's
verdict on every request of the driver's service accounts. The real authorizer names the role
that allowed a request but not the rule, so there the unused-rule listing counts a request for
the first rule of its role that grants it, as the authorizer visits them. That the
ResourceSlice admission policy refuses a plugin writing another node's slice is
``test_slice_policy``, on the real control plane only (the embedded server does not enforce
admission policies).

The workload: two controller replicas with leader election (the ``leader-election`` component,
so the lease rules are used), a ComputeDomain of two nodes with a Deployment of two workers,
workers Running and the domain Ready, a failover (a worker force-deleted and replaced), then the
workers and the domain deleted and everything torn down (DaemonSet, cliques, node labels, the
nodes' CDI specs and checkpoint entries).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
import yaml

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("scen2-leader-election"),
    pytest.mark.timeout(400),
]

RBAC_FILES = sorted((kit_extra.REPO / "deployments" / "base").glob("rbac-*.yaml"))
JUSTIFICATION = "least-privilege:"
SA_PREFIX = f"system:serviceaccount:{kit.DRIVER_NAMESPACE}:"


@attrs.frozen
class DeployedRule:
    """One rule of a role in ``deployments/``: its key as the API server names it, where it is,
    and the justification comment above it (empty when none)."""

    key: tuple[str, int]
    file: str
    line: int
    text: str
    verbs: tuple[str, ...]
    justification: str


def _role_key(doc: dict[str, object]) -> str | None:
    meta = doc.get("metadata")
    assert isinstance(meta, dict)
    if doc.get("kind") == "ClusterRole":
        return f"ClusterRole/{meta['name']}"
    if doc.get("kind") == "Role":
        return f"Role/{meta['namespace']}/{meta['name']}"
    return None


def deployed_rules(files: list[Path]) -> list[DeployedRule]:
    """Every rule of every Role/ClusterRole in ``files``, with the comment block directly above
    it (its first line found by position: the ``- apiGroups:`` items of the role's ``rules:``)."""
    out: list[DeployedRule] = []
    for path in files:
        text = path.read_text()
        chunks = re.split(r"^---$", text, flags=re.M)
        offset = 0
        for chunk in chunks:
            lines = chunk.splitlines()
            doc = yaml.safe_load(chunk)
            key = _role_key(doc) if isinstance(doc, dict) else None
            if key is not None:
                starts = [i for i, line in enumerate(lines) if line.startswith("  - apiGroups:")]
                rules = doc.get("rules") or []
                assert len(starts) == len(rules), f"{path}: write rules as '  - apiGroups: ...'"
                for index, start in enumerate(starts):
                    comment: list[str] = []
                    j = start - 1
                    while j >= 0 and lines[j].strip().startswith("#"):
                        comment.insert(0, lines[j].strip().lstrip("#").strip())
                        j -= 1
                    block = " ".join(comment)
                    why = block.split(JUSTIFICATION, 1)[1].strip() if JUSTIFICATION in block else ""
                    out.append(
                        DeployedRule(
                            key=(key, index),
                            file=path.name,
                            line=offset + start + 1,
                            text=str(rules[index]),
                            verbs=tuple(rules[index].get("verbs") or ()),
                            justification=why,
                        )
                    )
            offset += chunk.count("\n")
    return out


def test_the_rules_are_found_in_the_yaml() -> None:
    rules = deployed_rules(RBAC_FILES)
    keys = {r.key[0] for r in rules}
    assert "ClusterRole/computedomain-controller" in keys
    assert "Role/computedomain-system/computedomain-controller" in keys
    assert "ClusterRole/compute-domain-daemon-role" in keys
    assert "ClusterRole/computedomain-kubelet-plugin" in keys
    assert len({r.key for r in rules}) == len(rules)


@pytest.fixture(scope="module")
def shared(request: pytest.FixtureRequest) -> kit_extra.Shared:
    shared: kit_extra.Shared = request.getfixturevalue("leader_election_cluster")
    assert shared.rbac_usage is not None
    return shared


async def _workload(cluster: kit.Cluster) -> None:
    async with kit.api_of(cluster) as api:
        ns = await kit.create_namespace(api, "lp")
        domain = await kit.create_domain(api, ns, "job", num_nodes=2)
        uid = domain["metadata"]["uid"]
        await kit.create_worker_deployment(api, ns, "job", name="workers", replicas=2)
        pods = await kit.pods_running(api, cluster, ns, selector="app=workers", count=2)
        await kit.domain_ready(api, cluster, ns, "job")
        # Failover: a worker force-deleted; the Deployment replaces it and it runs again.
        await kit.delete_now(api, resources.PODS, pods[0]["metadata"]["name"], ns)
        await kit.pods_running(api, cluster, ns, selector="app=workers", count=2)
        await kit.domain_ready(api, cluster, ns, "job")
        # Teardown.
        await api.delete(resources.DEPLOYMENTS, "workers", ns)
        await kit.eventually(lambda: _none_left(api, ns), what="workers gone")
        await api.delete(resources.COMPUTE_DOMAINS, "job", ns)
        await kit.gone(api, resources.COMPUTE_DOMAINS, "job", ns)
        daemonset = f"{names.DAEMON_OBJECT_PREFIX}{uid}"
        await kit.gone(api, resources.DAEMON_SETS, daemonset, kit.DRIVER_NAMESPACE)

        async def left() -> list[str]:
            out = [f"clique {c['metadata']['name']}" for c in await kit.cliques(api, uid)]
            out += [f"daemon pod {p['metadata']['name']}" for p in await kit.daemon_pods(api, uid)]
            nodes, _ = await api.list_all(resources.NODES)
            out += [
                f"label on {n['metadata']['name']}"
                for n in nodes
                if names.COMPUTE_DOMAIN_LABEL in n["metadata"].get("labels", {})
            ]
            held = {n: cluster.leftovers(n) for n in cluster.nodes}
            # Domain directories stay until the plugin's periodic cleanup: unprepare leaves
            # them on purpose (docs/compatibility.md#daemon-claims).
            return out + [
                f"{n} holds {h}" for n, h in held.items() if h.cdi_files or h.checkpoint_claims
            ]

        async def torn_down() -> bool:
            return not await left()

        async def explain() -> str:
            return "\n".join(await left())

        await kit.eventually(torn_down, what="domain torn down", explain=explain)


async def _none_left(api: Api, ns: str) -> bool:
    items, _ = await api.list_all(resources.PODS, ns)
    return not items


async def test_the_components_use_only_justified_rules(shared: kit_extra.Shared) -> None:
    up, usage = shared.cluster, shared.rbac_usage
    assert usage is not None
    await _workload(up)

    async with kit.api_of(up) as api:
        uses = await kit_extra.rbac_uses(api, usage, shared.control_plane)
    ours = [u for u in uses if u.user.startswith(SA_PREFIX)]
    assert ours, "no request of a component was recorded"
    denied = sorted(
        {f"{u.user} {u.verb} {u.resource} ns={u.namespace!r}" for u in ours if u.rule is None}
    )
    assert not denied, "requests the deployed RBAC denied:\n" + "\n".join(denied)
    forbidden = [
        f"{path}: {line}"
        for path, text in kit_extra.driver_logs(up).items()
        for line in text.splitlines()
        if " 403" in line or "Forbidden" in line or "forbidden" in line
    ]
    assert not forbidden, "components logged authorization failures:\n" + "\n".join(forbidden)

    used = {u.rule for u in ours if u.rule is not None}
    rules = deployed_rules(RBAC_FILES)
    unused = [r for r in rules if r.key not in used]
    print("\nRBAC rules in deployments/ no component used:")
    for r in unused:
        print(f"  {r.file}:{r.line} {r.key[0]}[{r.key[1]}] {r.text}")
        print(f"    why kept: {r.justification or '-'}")
    print(f"RBAC rules used: {len(rules) - len(unused)} of {len(rules)}")
    print("Verbs of used rules that no request needed (informational):")
    for r in rules:
        spare = set(r.verbs) - {u.verb for u in ours if u.rule == r.key}
        if r.key in used and spare:
            print(f"  {r.file}:{r.line} {r.key[0]}[{r.key[1]}]: {sorted(spare)}")
    unjustified = [
        f"{r.file}:{r.line} {r.key[0]}[{r.key[1]}] {r.text}" for r in unused if not r.justification
    ]
    assert not unjustified, (
        f"unused RBAC rules without a '# {JUSTIFICATION} <why>' comment:\n" + "\n".join(unjustified)
    )
