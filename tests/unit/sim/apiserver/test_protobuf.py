"""Decoding the Kubernetes protobuf bodies client-go's typed clients send, for any built-in kind
(hand-encoded bytes, and messages encoded by the protobuf runtime from the same descriptors)."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.apiserver import protobuf, protodescriptors


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _len(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _len(1, api_version.encode()) + _len(2, kind.encode())
    return protobuf.MAGIC + _len(1, type_meta) + _len(2, raw)


def test_token_request() -> None:
    meta = _len(1, b"sa1") + _len(3, b"ns") + _len(2, b"") + _int(7, 0)
    spec = _len(1, b"aud-a") + _len(1, b"aud-b") + _int(4, 3600)
    body = _envelope("authentication.k8s.io/v1", "TokenRequest", _len(1, meta) + _len(2, spec))
    assert protobuf.decode(body) == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"name": "sa1", "namespace": "ns"},
        "spec": {"audiences": ["aud-a", "aud-b"], "expirationSeconds": 3600},
    }


def test_configmap_with_maps_and_labels() -> None:
    label = _len(11, _len(1, b"app") + _len(2, b"x"))
    data = _len(2, _len(1, b"k") + _len(2, b"v"))
    binary = _len(3, _len(1, b"b") + _len(2, b"\x00\x01"))
    body = _envelope("v1", "ConfigMap", _len(1, _len(1, b"cm") + label) + data + binary)
    obj = protobuf.decode(body)
    assert obj["metadata"] == {"name": "cm", "labels": {"app": "x"}}
    assert obj["data"] == {"k": "v"}
    assert obj["binaryData"] == {"b": "AAE="}


def test_delete_options_keep_zero_grace_period() -> None:
    body = _envelope("meta.k8s.io/v1", "DeleteOptions", _int(1, 0) + _len(4, b"Foreground"))
    obj = protobuf.decode(body)
    assert obj["gracePeriodSeconds"] == 0
    assert obj["propagationPolicy"] == "Foreground"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{}", "missing the k8s protobuf prefix"),
        (
            _envelope("resource.nvidia.com/v1beta1", "ComputeDomain", b""),
            "'ComputeDomain' are not supported",
        ),
        (protobuf.MAGIC + b"\x0a\xff", "malformed protobuf body"),
    ],
    ids=["json", "unsupported-kind", "truncated"],
)
def test_errors(body: bytes, message: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match=message):
        protobuf.decode(body)


def _encoded(api_version: str, kind: str, fields: dict[str, Any]) -> bytes:
    from google.protobuf import json_format, message_factory

    pool = protodescriptors.load()
    name = protobuf._message_name(api_version, kind)
    msg = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))()
    json_format.ParseDict(fields, msg)
    return _envelope(api_version, kind, msg.SerializeToString())


def test_a_job_as_kubectl_create_job_sends_it() -> None:
    body = _encoded(
        "batch/v1",
        "Job",
        {
            "metadata": {"name": "hello", "creationTimestamp": {}},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"creationTimestamp": {}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "hello",
                                "image": "busybox",
                                "command": ["sh", "-c", "exit 0"],
                                "resources": {"limits": {"cpu": {"string": "500m"}}},
                                "ports": [{"containerPort": 80}],
                            }
                        ],
                    },
                },
            },
            "status": {},
        },
    )
    assert protobuf.decode(body) == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "hello"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "hello",
                            "image": "busybox",
                            "command": ["sh", "-c", "exit 0"],
                            "resources": {"limits": {"cpu": "500m"}},
                            "ports": [{"containerPort": 80}],
                        }
                    ],
                },
            },
        },
        "status": {},
    }


def test_special_types_take_their_json_form() -> None:
    body = _encoded(
        "apps/v1",
        "Deployment",
        {
            "metadata": {
                "name": "d",
                "creationTimestamp": {"seconds": 1800000000},
                "managedFields": [{"manager": "m", "fieldsV1": {"Raw": "eyJmOmEiOnt9fQ=="}}],
            },
            "spec": {
                "replicas": 0,
                "strategy": {"rollingUpdate": {"maxSurge": {"type": 1, "strVal": "25%"}}},
            },
        },
    )
    obj = protobuf.decode(body)
    assert obj["metadata"]["creationTimestamp"] == "2027-01-15T08:00:00Z"
    assert obj["metadata"]["managedFields"] == [{"manager": "m", "fieldsV1": {"f:a": {}}}]
    assert obj["spec"]["replicas"] == 0, "a pointer field set to zero is kept"
    assert obj["spec"]["strategy"] == {"rollingUpdate": {"maxSurge": "25%"}}


@pytest.mark.parametrize(
    ("nanos", "text"),
    [(0, "0s"), (300_000_000, "300ms"), (5_000_000_000, "5s"), (3_605_000_000_000, "1h0m5s"),
     (90_500_000_000, "1m30.5s")],
)  # fmt: skip
def test_durations_print_as_go_prints_them(nanos: int, text: str) -> None:
    assert protobuf._duration(nanos) == text
