"""CDI spec files resolve into the edits the runtime applies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from computedomain_sim.kubelet import cdi

CLAIM = "1f0e2c3a-0000-4000-8000-000000000001"


def write_specs(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    base = {
        "cdiVersion": "0.5.0",
        "kind": "k8s.compute-domain.nvidia.com/device",
        "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"]},
        "devices": [{"name": "all", "containerEdits": {"env": ["BASE=1"]}}],
    }
    claim = {
        "cdiVersion": "0.5.0",
        "kind": "k8s.compute-domain.nvidia.com/claim",
        "devices": [
            {
                "name": f"{CLAIM}-channel-0",
                "containerEdits": {
                    "deviceNodes": [
                        {
                            "path": "/dev/nvidia-caps-imex-channels/channel0",
                            "type": "c",
                            "major": 234,
                            "minor": 0,
                            "fileMode": 438,
                        }
                    ]
                },
            },
            {
                "name": f"{CLAIM}-daemon-0",
                "containerEdits": {
                    "env": ["CLIQUE_ID=abc.1", "BASE=2"],
                    "mounts": [
                        {
                            "hostPath": "/var/lib/kubelet/plugins/x/domains/u",
                            "containerPath": "/imexd",
                            "options": ["rw", "nosuid", "nodev", "bind"],
                        }
                    ],
                },
            },
        ],
    }
    (directory / "k8s.compute-domain.nvidia.com-device_base.yaml").write_text(yaml.safe_dump(base))
    (directory / f"k8s.compute-domain.nvidia.com-claim_{CLAIM}.json").write_text(json.dumps(claim))
    (directory / "notes.txt").write_text("ignored")
    (directory / "broken.yaml").write_text("kind: [unclosed")


def test_resolve_applies_spec_then_device_edits_in_request_order(tmp_path: Path) -> None:
    write_specs(tmp_path)
    registry = cdi.load_dir(tmp_path)
    edits = cdi.resolve(
        registry,
        [
            "k8s.compute-domain.nvidia.com/device=all",
            f"k8s.compute-domain.nvidia.com/claim={CLAIM}-daemon-0",
            f"k8s.compute-domain.nvidia.com/claim={CLAIM}-channel-0",
        ],
    )
    assert edits.env_map() == {"NVIDIA_VISIBLE_DEVICES": "void", "BASE": "2", "CLIQUE_ID": "abc.1"}
    assert edits.mounts == (
        cdi.Mount(
            "/var/lib/kubelet/plugins/x/domains/u", "/imexd", ("rw", "nosuid", "nodev", "bind")
        ),
    )
    assert not edits.mounts[0].read_only
    assert edits.device_nodes == (
        cdi.DeviceNode("/dev/nvidia-caps-imex-channels/channel0", "c", 234, 0, 438),
    )


def test_unknown_and_malformed_ids_are_refused_together(tmp_path: Path) -> None:
    write_specs(tmp_path)
    with pytest.raises(
        cdi.CdiError, match=r"unresolvable CDI devices k8s\.x/claim=nope, no-equals"
    ):
        cdi.resolve(cdi.load_dir(tmp_path), ["k8s.x/claim=nope", "no-equals"])


def test_a_device_defined_twice_is_ambiguous(tmp_path: Path) -> None:
    write_specs(tmp_path)
    spec = yaml.safe_load((tmp_path / "k8s.compute-domain.nvidia.com-device_base.yaml").read_text())
    (tmp_path / "copy.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(cdi.CdiError):
        cdi.resolve(cdi.load_dir(tmp_path), ["k8s.compute-domain.nvidia.com/device=all"])


def test_missing_directory_is_empty(tmp_path: Path) -> None:
    assert cdi.load_dir(tmp_path / "absent").devices == {}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"devices": [{"name": "a"}]}, "'kind' must be"),
        ({"kind": "v/c", "devices": []}, "'devices' must be a non-empty list"),
        ({"kind": "v/c", "devices": [{"name": "-bad"}]}, "invalid device name"),
        (
            {"kind": "v/c", "devices": [{"name": "a", "containerEdits": {"mounts": [{}]}}]},
            "invalid containerEdits",
        ),
    ],
    ids=["no kind", "no devices", "bad name", "mount without paths"],
)
def test_parse_errors_name_the_source(doc: dict[str, object], message: str) -> None:
    with pytest.raises(cdi.CdiError, match=message) as info:
        cdi.parse_spec(doc, "spec.yaml")
    assert "spec.yaml" in str(info.value)


def test_a_spec_is_parsed_again_only_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_specs(tmp_path)
    parsed: list[str] = []
    parse = cdi._parse_file

    def counting(path: Path) -> dict[str, cdi.ContainerEdits] | None:
        parsed.append(path.name)
        return parse(path)

    monkeypatch.setattr(cdi, "_parse_file", counting)
    first = cdi.load_dir(tmp_path)
    assert len(parsed) == 3  # base, claim and the broken one
    assert cdi.load_dir(tmp_path) == first
    assert len(parsed) == 3  # nothing changed: nothing parsed
    claim_file = tmp_path / f"k8s.compute-domain.nvidia.com-claim_{CLAIM}.json"
    renamed = json.loads(claim_file.read_text())
    old_name = renamed["devices"][0]["name"]
    renamed["devices"][0]["name"] = f"{CLAIM}-daemon-9"
    fresh = tmp_path / "fresh.json"
    fresh.write_text(json.dumps(renamed))
    fresh.replace(claim_file)  # an atomic rewrite, as the plugin writes
    registry = cdi.load_dir(tmp_path)
    assert parsed[3:] == [claim_file.name]
    assert f"k8s.compute-domain.nvidia.com/claim={CLAIM}-daemon-9" in registry.devices
    assert f"k8s.compute-domain.nvidia.com/claim={old_name}" not in registry.devices
    claim_file.unlink()
    assert not any("claim=" in name for name in cdi.load_dir(tmp_path).devices)
