"""Models survive the round trip through their wire form, with upstream's omissions."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from computedomain.api import convert, models

text = st.text(alphabet="abcdef0123456789-.", min_size=1, max_size=12)
statuses = st.none() | st.sampled_from(models.Status)
nodes = st.builds(
    models.ComputeDomainNode,
    name=text,
    ip_address=text,
    clique_id=st.just("") | text,
    index=st.integers(-1, 17),
    status=statuses,
)
domains = st.builds(
    models.ComputeDomain,
    metadata=st.builds(models.ObjectMeta, name=text, namespace=text, uid=text),
    spec=st.builds(
        models.ComputeDomainSpec,
        channel=st.builds(
            models.ChannelSpec,
            resource_claim_template=st.builds(models.ResourceClaimTemplateRef, name=text),
            allocation_mode=st.none() | st.sampled_from(models.AllocationMode),
        ),
        num_nodes=st.integers(0, 100),
    ),
    status=st.none()
    | st.builds(
        models.ComputeDomainStatus,
        status=st.sampled_from(models.Status),
        nodes=st.lists(nodes, max_size=4).map(tuple),
    ),
)


@given(domains)
def test_compute_domain_round_trip(cd: models.ComputeDomain) -> None:
    assert convert.compute_domain(convert.to_wire(cd)) == cd


def test_wire_names_and_omissions_match_upstream() -> None:
    node = models.ComputeDomainNode(name="n1", ip_address="10.0.0.1", clique_id="", index=0)
    status = models.ComputeDomainStatus(status=models.Status.READY, nodes=(node,))
    assert convert.to_wire(status) == {
        "status": "Ready",
        "nodes": [{"name": "n1", "ipAddress": "10.0.0.1", "cliqueID": "", "index": 0}],
    }
    # Clearing nodes drops the key rather than sending [] (docs/compatibility.md#computedomain).
    assert convert.to_wire(attrs.evolve(status, nodes=())) == {"status": "Ready"}


def test_unknown_fields_are_ignored_and_empty_status_is_none() -> None:
    clique = convert.clique(
        {
            "metadata": {"name": "u.c", "managedFields": [{}]},
            "daemons": [
                {"nodeName": "n", "ipAddress": "1.1.1.1", "cliqueID": "c", "index": 3, "status": ""}
            ],
            "futureField": 1,
        }
    )
    assert clique.daemons == (models.DaemonInfo("n", "1.1.1.1", "c", 3, None),)
    assert clique.daemons[0].as_node().name == "n"
