"""The committed stubs are exactly what the generator makes from the committed .proto files."""

from __future__ import annotations

from pathlib import Path

from computedomain.proto import generate


def test_committed_stubs_are_fresh(tmp_path: Path) -> None:
    fresh = generate.generate(tmp_path / "gen")
    fresh_names = sorted(str(p.relative_to(tmp_path / "gen")) for p in fresh)
    committed = sorted(
        str(p.relative_to(generate.GEN_DIR))
        for p in generate.GEN_DIR.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert committed == fresh_names, "stub files differ: run `make proto`"
    stale = [
        name
        for name in fresh_names
        if (tmp_path / "gen" / name).read_bytes() != (generate.GEN_DIR / name).read_bytes()
    ]
    assert not stale, f"stale stubs (run `make proto`): {stale}"


def test_imports_resolve_inside_the_package(tmp_path: Path) -> None:
    for path in generate.generate(tmp_path / "gen"):
        for line in path.read_text().splitlines():
            if line.startswith("from ") and "_pb2" in line:
                assert line.startswith("from computedomain.proto.gen."), line


def test_wire_names_and_field_numbers() -> None:
    from computedomain.proto.gen.dra.v1 import api_pb2 as v1
    from computedomain.proto.gen.dra.v1beta1 import api_pb2 as v1beta1
    from computedomain.proto.gen.pluginregistration import api_pb2 as reg

    assert v1.DESCRIPTOR.services_by_name["DRAPlugin"].full_name == (
        "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
    )
    assert v1beta1.DESCRIPTOR.package == "k8s.io.kubelet.pkg.apis.dra.v1beta1"
    assert reg.DESCRIPTOR.services_by_name["Registration"].full_name == (
        "pluginregistration.Registration"
    )
    numbers = {f.name: f.number for f in v1.Device.DESCRIPTOR.fields}
    assert numbers == {
        "request_names": 1,
        "pool_name": 2,
        "device_name": 3,
        "cdi_device_ids": 4,
        "share_id": 5,
    }
    assert "share_id" not in v1beta1.Device.DESCRIPTOR.fields_by_name
    assert {f.name: f.number for f in v1.Claim.DESCRIPTOR.fields} == {
        "namespace": 1,
        "uid": 2,
        "name": 3,
    }
    assert {f.name: f.number for f in reg.PluginInfo.DESCRIPTOR.fields} == {
        "type": 1,
        "name": 2,
        "endpoint": 3,
        "supported_versions": 4,
    }
    assert {f.name: f.number for f in reg.RegistrationStatus.DESCRIPTOR.fields} == {
        "plugin_registered": 1,
        "error": 2,
    }
    assert v1.NodeUnprepareResourceResponse.DESCRIPTOR.fields_by_name["error"].number == 1
    assert v1.NodePrepareResourceResponse.DESCRIPTOR.fields_by_name["error"].number == 2
