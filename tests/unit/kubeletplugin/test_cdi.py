"""CDI output against the CDI rules: daemon claims, Single and All channel claims, no clique."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain.kubeletplugin import basespec, cdi, channelclaims, daemonclaims
from computedomain.kubeletplugin.cdistore import CdiStore

DIGIT_UID = "0f6c1d3e-8b7a-4c2d-9e1f-2a3b4c5d6e7f"
LETTER_UID = "af6c1d3e-8b7a-4c2d-9e1f-2a3b4c5d6e7f"
CLIQUE = "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.1"
DOMAIN = daemonclaims.Domain("cd-uid-1", "job", "team-a")
FABRIC = cdi.DeviceNode("/dev/nvidia-caps/nvidia-cap1", major=235, minor=1, file_mode=256)
HOST_DIR = Path("/var/lib/kubelet/plugins/compute-domain.nvidia.com/domains/cd-uid-1")


def daemon_spec(uid: str, clique: str, *, host_paths: bool) -> dict[str, Any] | None:
    edits = daemonclaims.edits(DOMAIN, clique, HOST_DIR, FABRIC if clique else None)
    return cdi.claim_spec(uid, [("daemon-0", edits)], host_paths=host_paths)


def channel_spec(uid: str, channels: list[int], clique: str = CLIQUE) -> dict[str, Any] | None:
    edits = channelclaims.edits(channels, 234, clique_id=clique)
    return cdi.claim_spec(uid, [("channel-0", edits)], host_paths=False)


def test_daemon_claim_spec() -> None:
    spec = daemon_spec(DIGIT_UID, CLIQUE, host_paths=True)
    assert spec is not None
    cdi.validate(spec)
    assert spec["cdiVersion"] == "0.5.0"
    assert spec["kind"] == "k8s.compute-domain.nvidia.com/claim"
    (device,) = spec["devices"]
    assert device["name"] == f"{DIGIT_UID}-daemon-0"
    edits = device["containerEdits"]
    assert edits["env"] == [
        f"CLIQUE_ID={CLIQUE}",
        "COMPUTE_DOMAIN_UUID=cd-uid-1",
        "COMPUTE_DOMAIN_NAME=job",
        "COMPUTE_DOMAIN_NAMESPACE=team-a",
    ]
    assert edits["deviceNodes"] == [
        {
            "path": "/dev/nvidia-caps/nvidia-cap1",
            "hostPath": "/dev/nvidia-caps/nvidia-cap1",
            "type": "c",
            "major": 235,
            "minor": 1,
            "fileMode": 256,
        }
    ]
    assert edits["mounts"] == [
        {
            "hostPath": str(HOST_DIR),
            "containerPath": "/imexd",
            "options": ["rw", "nosuid", "nodev", "bind"],
        }
    ]
    assert list(spec) == ["cdiVersion", "kind", "devices"]


def test_daemon_without_clique_has_env_and_mount_only() -> None:
    spec = daemon_spec(LETTER_UID, "", host_paths=False)
    assert spec is not None
    cdi.validate(spec)
    assert spec["cdiVersion"] == "0.3.0"  # letter-first name, no hostPath: nothing newer needed
    edits = spec["devices"][0]["containerEdits"]
    assert "deviceNodes" not in edits
    assert edits["env"][0] == "CLIQUE_ID="
    assert edits["mounts"][0]["containerPath"] == "/imexd"


def test_single_channel() -> None:
    spec = channel_spec(DIGIT_UID, [0])
    assert spec is not None
    cdi.validate(spec)
    assert spec["cdiVersion"] == "0.5.0"  # device name starts with a digit
    assert spec["devices"][0]["name"] == f"{DIGIT_UID}-channel-0"
    assert spec["devices"][0]["containerEdits"] == {
        "deviceNodes": [
            {
                "path": "/dev/nvidia-caps-imex-channels/channel0",
                "type": "c",
                "major": 234,
                "fileMode": 438,  # 0666; minor 0 is omitted (omitempty)
            }
        ]
    }


def test_all_channels_sorted_lexicographically() -> None:
    spec = channel_spec(LETTER_UID, list(range(2048)))
    assert spec is not None
    cdi.validate(spec)
    nodes = spec["devices"][0]["containerEdits"]["deviceNodes"]
    assert len(nodes) == 2048
    paths = [n["path"].rsplit("/", 1)[1] for n in nodes]
    assert paths[:5] == ["channel0", "channel1", "channel10", "channel100", "channel1000"]
    assert paths == sorted(paths)
    assert {n["minor"] for n in nodes[1:]} == set(range(1, 2048))


def test_no_clique_channel_has_no_spec() -> None:
    assert channel_spec(DIGIT_UID, [0], clique="") is None


def test_yaml_form(tmp_path: Path) -> None:
    spec = channel_spec(DIGIT_UID, [0, 1])
    assert spec is not None
    store = CdiStore(tmp_path / "cdi")
    store.ensure_root()
    path = store.write_claim(DIGIT_UID, spec)
    assert path.name == f"k8s.compute-domain.nvidia.com-claim_{DIGIT_UID}.yaml"
    assert path.read_bytes().startswith(b"---\n")
    assert yaml.safe_load(path.read_text()) == spec
    assert path.stat().st_mode & 0o777 == 0o600
    assert store.claim_uids() == {DIGIT_UID}
    assert store.remove_claim(DIGIT_UID)
    assert not store.remove_claim(DIGIT_UID)
    assert store.claim_uids() == set()


def test_store_refuses_unsafe_uid_and_invalid_spec(tmp_path: Path) -> None:
    store = CdiStore(tmp_path)
    with pytest.raises(ValueError, match="claim UID"):
        store.claim_path("../etc")
    spec = channel_spec(DIGIT_UID, [0])
    assert spec is not None
    spec["cdiVersion"] = "0.3.0"
    with pytest.raises(cdi.CdiError, match="too low"):
        store.write_claim(DIGIT_UID, spec)
    assert not list(tmp_path.iterdir())


def _valid() -> dict[str, Any]:
    spec = daemon_spec(DIGIT_UID, CLIQUE, host_paths=True)
    assert spec is not None
    return spec


INVALID = {
    "unknown-version": (lambda s: s.update(cdiVersion="0.2.0"), "cdiVersion"),
    "no-vendor": (lambda s: s.update(kind="claim"), "kind"),
    "bad-class": (lambda s: s.update(kind="k8s.compute-domain.nvidia.com/-x"), "kind"),
    "no-devices": (lambda s: s.update(devices=[]), "devices"),
    "bad-device-name": (lambda s: s["devices"][0].update(name="-x-"), "devices[0].name"),
    "duplicate-device": (
        lambda s: s["devices"].append(copy.deepcopy(s["devices"][0])),
        "duplicate",
    ),
    "relative-node-path": (
        lambda s: s["devices"][0]["containerEdits"]["deviceNodes"][0].update(path="dev/x"),
        "deviceNodes[0].path",
    ),
    "bad-env": (lambda s: s["devices"][0]["containerEdits"]["env"].append("NOEQUALS"), "env[4]"),
    "mount-without-host-path": (
        lambda s: s["devices"][0]["containerEdits"]["mounts"][0].pop("hostPath"),
        "mounts[0].hostPath",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_validate_rejects(case: str) -> None:
    mutate, field = INVALID[case]
    spec = _valid()
    mutate(spec)
    with pytest.raises(cdi.CdiError, match=field.replace("[", r"\[").replace("]", r"\]")):
        cdi.validate(spec)


@pytest.mark.parametrize(
    ("spec", "version"),
    [
        ({"kind": "v/c", "devices": [{"name": "a"}]}, "0.3.0"),
        ({"kind": "v/c", "devices": [{"name": "1a"}]}, "0.5.0"),
        ({"kind": "v/c.x", "devices": [{"name": "a"}]}, "0.6.0"),
        ({"kind": "v/c", "annotations": {"a": "b"}, "devices": [{"name": "a"}]}, "0.6.0"),
        (
            {
                "kind": "v/c",
                "devices": [{"name": "a", "containerEdits": {"mounts": [{"type": "bind"}]}}],
            },
            "0.4.0",
        ),
        ({"kind": "v/c", "containerEdits": {"additionalGids": [5]}, "devices": []}, "0.7.0"),
        ({"kind": "v/c", "containerEdits": {"netDevices": [{}]}, "devices": []}, "1.1.0"),
    ],
)
def test_minimum_version(spec: dict[str, Any], version: str) -> None:
    assert cdi.minimum_version(spec) == version


def test_fake_base_spec() -> None:
    spec = basespec.fake_spec(4, uvm_major=507)
    cdi.validate(spec)
    assert spec["kind"] == "k8s.compute-domain.nvidia.com/device"
    assert spec["devices"][0]["name"] == "all"
    paths = [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]]
    assert paths == [
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
        "/dev/nvidia0",
        "/dev/nvidia1",
        "/dev/nvidia2",
        "/dev/nvidia3",
        "/dev/nvidiactl",
    ]
    assert spec["containerEdits"]["env"] == ["NVIDIA_VISIBLE_DEVICES=void"]
    assert spec["cdiVersion"] == "0.3.0"
    assert cdi.BASE_DEVICE_ID == "k8s.compute-domain.nvidia.com/device=all"


def test_root_transform() -> None:
    spec = {
        "cdiVersion": "0.3.0",
        "kind": "k8s.compute-domain.nvidia.com/device",
        "devices": [{"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}],
        "containerEdits": {
            "env": ["NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_VISIBLE_DEVICES=void"],
            "mounts": [
                {"hostPath": "/driver-root/usr/bin/nvidia-imex", "containerPath": "/usr/bin/x"}
            ],
            "hooks": [
                {
                    "hookName": "createContainer",
                    "path": "/driver-root/usr/bin/nvidia-cdi-hook",
                    "args": ["create-symlinks", "--link", "/driver-root/lib/a::/lib/b"],
                }
            ],
        },
    }
    out = basespec.finish(basespec.root_transform(spec, "/driver-root", "/"))
    assert out["devices"][0]["containerEdits"]["deviceNodes"][0]["hostPath"] == "/dev/nvidia0"
    assert out["containerEdits"]["mounts"][0]["hostPath"] == "/usr/bin/nvidia-imex"
    assert out["containerEdits"]["hooks"][0]["path"] == "/usr/bin/nvidia-cdi-hook"
    assert out["containerEdits"]["hooks"][0]["args"][2] == "/lib/a::/lib/b"
    assert out["containerEdits"]["env"] == ["NVIDIA_VISIBLE_DEVICES=void"]
    assert out["cdiVersion"] == "0.5.0"  # hostPath on device nodes
    same = basespec.root_transform(spec, "/", "/")
    assert same == spec
    moved = basespec.root_transform(spec, "/driver-root", "/run/nvidia/driver")
    assert moved["containerEdits"]["mounts"][0]["hostPath"] == (
        "/run/nvidia/driver/usr/bin/nvidia-imex"
    )


def test_base_spec_without_device_nodes_is_refused() -> None:
    with pytest.raises(basespec.BaseSpecError, match="no NVIDIA device nodes"):
        basespec.finish(
            {"kind": "k8s.compute-domain.nvidia.com/device", "devices": [{"name": "all"}]}
        )


def test_toolkit_failure_is_reported(tmp_path: Path) -> None:
    tool = tmp_path / "nvidia-ctk"
    tool.write_text("#!/bin/sh\necho 'no driver' >&2\nexit 3\n")
    tool.chmod(0o755)
    with pytest.raises(basespec.BaseSpecError, match="exited with 3: no driver"):
        basespec.generate_with_toolkit(
            str(tool), container_driver_root=tmp_path, host_driver_root=Path("/"), hook_path="/h"
        )


def test_toolkit_output_is_transformed(tmp_path: Path) -> None:
    tool = tmp_path / "nvidia-ctk"
    tool.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in --output=*) out="${a#--output=}";; esac; done\n'
        'cat > "$out" <<EOF\n'
        "cdiVersion: 0.5.0\n"
        "kind: management.nvidia.com/gpu\n"
        "devices:\n"
        "- name: all\n"
        "  containerEdits:\n"
        "    deviceNodes:\n"
        f"    - path: /dev/nvidiactl\n"
        f"      hostPath: {tmp_path}/dev/nvidiactl\n"
        "EOF\n"
    )
    tool.chmod(0o755)
    (tmp_path / "dev").mkdir()
    spec = basespec.generate_with_toolkit(
        str(tool), container_driver_root=tmp_path, host_driver_root=Path("/"), hook_path="/h"
    )
    assert spec["kind"] == "k8s.compute-domain.nvidia.com/device"
    node = spec["devices"][0]["containerEdits"]["deviceNodes"][0]
    assert node["hostPath"] == "/dev/nvidiactl"
    assert spec["containerEdits"]["env"] == ["NVIDIA_VISIBLE_DEVICES=void"]


scalars = st.one_of(
    st.text(max_size=8),
    st.integers(-(2**40), 2**40),
    st.sampled_from(["true", "null", "0.5.0", "1e3", "~", "- x", "a: b", "#", "'", '"']),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.from_regex(r"[a-zA-Z][a-zA-Z0-9]{0,6}", fullmatch=True), inner, max_size=3
        )
    ),
    max_leaves=12,
)


@settings(max_examples=60)
@given(st.dictionaries(st.text(max_size=6), values, max_size=4))
def test_yaml_emitter_round_trips(doc: dict[str, Any]) -> None:
    assert yaml.load(cdi.to_yaml(doc), Loader=yaml.CSafeLoader) == doc


def test_claim_uids_lists_only_specs_the_store_can_remove(tmp_path: Path) -> None:
    """A directory named like a claim spec, or a name whose UID is not a safe path component,
    is not a claim spec: listing it made the orphan cleanup fail on it every run."""
    store = CdiStore(tmp_path / "cdi")
    store.ensure_root()
    prefix = "k8s.compute-domain.nvidia.com-claim_"
    (store.root / f"{prefix}{DIGIT_UID}.yaml").write_text("spec")
    (store.root / f"{prefix}a-directory.yaml").mkdir()
    (store.root / f"{prefix}a:b.yaml").write_text("not ours")
    (store.root / f"{prefix}linked.yaml").symlink_to(tmp_path / "elsewhere")
    assert store.claim_uids() == {DIGIT_UID, "linked"}
    for uid in store.claim_uids():
        store.remove_claim(uid)  # raises nothing
    assert sorted(p.name for p in store.root.iterdir()) == [
        f"{prefix}a-directory.yaml",
        f"{prefix}a:b.yaml",
    ]
