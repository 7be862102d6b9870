"""Version-neutral values <-> v1 / v1beta1 messages, and the kubelet's registration rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.proto import dra, kubelet_client

text = st.text(alphabet="abcdefghij-0123456789", max_size=12)
devices = st.builds(
    dra.Device,
    request_names=st.lists(text, max_size=2).map(tuple),
    pool_name=text,
    device_name=text,
    cdi_device_ids=st.lists(text, max_size=3).map(tuple),
    share_id=st.none() | text,
)
results = st.dictionaries(
    text,
    st.builds(dra.PrepareResult, devices=st.lists(devices, max_size=3).map(tuple), error=text),
    max_size=4,
)


@given(results)
def test_prepare_round_trip_v1(values: dict[str, dra.PrepareResult]) -> None:
    wire = dra.prepare_response(dra.Version.V1, values)
    decoded = dra.messages(dra.Version.V1).NodePrepareResourcesResponse.FromString(
        wire.SerializeToString()
    )
    assert dra.prepare_results(decoded) == values


@given(results)
def test_prepare_round_trip_v1beta1_drops_share_id(values: dict[str, dra.PrepareResult]) -> None:
    wire = dra.prepare_response(dra.Version.V1BETA1, values)
    decoded = dra.prepare_results(wire)
    expected = {
        uid: dra.PrepareResult(
            devices=tuple(
                dra.Device(d.request_names, d.pool_name, d.device_name, d.cdi_device_ids)
                for d in r.devices
            ),
            error=r.error,
        )
        for uid, r in values.items()
    }
    assert decoded == expected


def test_unprepare_and_claims() -> None:
    claims = [dra.ClaimRef("ns", "u1", "c1"), dra.ClaimRef("ns", "u2", "c2")]
    for version in dra.Version:
        request = dra.unprepare_request(version, claims)
        assert dra.claims_from_wire(request.claims) == tuple(claims)
        wire = dra.unprepare_response(version, {"u1": "", "u2": "boom"})
        assert dra.unprepare_results(wire) == {"u1": "", "u2": "boom"}


def test_version_names() -> None:
    assert dra.Version.V1.service_name == "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
    assert dra.services(dra.Version.V1BETA1).DRAPluginStub is not None


class Info:
    def __init__(self, **fields: object) -> None:
        self.type = "DRAPlugin"
        self.name = "compute-domain.nvidia.com"
        self.endpoint = "/p/dra.sock"
        self.supported_versions = ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
        self.__dict__.update(fields)


@pytest.mark.parametrize(
    ("offered", "supported", "expected"),
    [
        (["v1.DRAPlugin", "v1beta1.DRAPlugin"], dra.KUBELET_VERSIONS, dra.Version.V1),
        (["v1beta1.DRAPlugin", "v1.DRAPlugin"], dra.KUBELET_VERSIONS, dra.Version.V1BETA1),
        (["v1.DRAPlugin", "v1beta1.DRAPlugin"], (dra.Version.V1BETA1,), dra.Version.V1BETA1),
        (["v1alpha1.DRAResourceHealth"], dra.KUBELET_VERSIONS, None),
    ],
)
def test_choose_version(
    offered: list[str], supported: tuple[dra.Version, ...], expected: dra.Version | None
) -> None:
    assert kubelet_client.choose_version(offered, supported) is expected


def test_validate_info() -> None:
    reg = kubelet_client.validate_info(Info(), "/r.sock", driver_name="compute-domain.nvidia.com")
    assert (reg.endpoint, reg.version) == ("/p/dra.sock", dra.Version.V1)
    assert kubelet_client.validate_info(Info(endpoint=""), "/r.sock").endpoint == "/r.sock"
    with pytest.raises(kubelet_client.RegistrationError, match="type 'CSIPlugin'"):
        kubelet_client.validate_info(Info(type="CSIPlugin"), "/r.sock")
    with pytest.raises(kubelet_client.RegistrationError, match="not the expected driver"):
        kubelet_client.validate_info(Info(name="x"), "/r.sock", driver_name="y")
    with pytest.raises(kubelet_client.RegistrationError, match="none of the plugin's services"):
        kubelet_client.validate_info(Info(supported_versions=["v9.DRAPlugin"]), "/r.sock")
