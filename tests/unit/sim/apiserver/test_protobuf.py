"""Decoding the Kubernetes protobuf bodies kubectl's typed clients send."""

from __future__ import annotations

import pytest

from computedomain_sim.apiserver import protobuf


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
        (_envelope("apps/v1", "Deployment", b""), "'Deployment' are not supported"),
        (protobuf.MAGIC + b"\x0a\xff", "truncated"),
    ],
    ids=["json", "unsupported-kind", "truncated"],
)
def test_errors(body: bytes, message: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match=message):
        protobuf.decode(body)
