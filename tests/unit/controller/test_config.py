"""Pure parsers behind the controller's settings: each bad value names its setting."""

from __future__ import annotations

import pytest

from computedomain.api.errors import ConfigError
from computedomain.controller import config, settingvalues
from tests.unit.controller import builders


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ()),
        ("  ", ()),
        ("a", ("a",)),
        (" a, b ,c ", ("a", "b", "c")),
        ("a b\tc", ("a", "b", "c")),
        ("a,,a, b", ("a", "b")),
    ],
    ids=["empty", "blank", "one", "commas", "whitespace", "repeats"],
)
def test_pull_secrets(text: str, expected: tuple[str, ...]) -> None:
    assert settingvalues.parse_pull_secrets(text) == expected


def test_bad_pull_secret_names_the_setting() -> None:
    with pytest.raises(ConfigError, match="CD_DAEMON_IMAGE_PULL_SECRET_NAMES") as info:
        settingvalues.parse_pull_secrets("ok,Not_Valid")
    assert "Not_Valid" in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", ()), ("a", ("a",)), (" a , b,,a ", ("a", "b")), ("a,", ("a",))],
    ids=["empty", "one", "trimmed-deduplicated", "trailing-comma"],
)
def test_additional_namespaces(text: str, expected: tuple[str, ...]) -> None:
    assert settingvalues.parse_namespaces(text) == expected


def test_bad_namespace_names_the_setting() -> None:
    with pytest.raises(ConfigError, match="ADDITIONAL_NAMESPACES"):
        settingvalues.parse_namespaces("good,Bad/ns")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("cpu=100m,memory=64Mi", {"requests": {"cpu": "100m", "memory": "64Mi"}}),
        (" cpu = 1 , ", {"requests": {"cpu": "1"}}),
        ('{"cpu": "250m"}', {"requests": {"cpu": "250m"}}),
        ('{"cpu": 2}', {"requests": {"cpu": "2"}}),
        (
            '{"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}',
            {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
        ),
        ('{"limits": {"nvidia.com/gpu": "0"}}', {"limits": {"nvidia.com/gpu": "0"}}),
        ("{}", {}),
    ],
    ids=[
        "empty",
        "pairs",
        "spaces",
        "json-flat",
        "json-number",
        "json-sections",
        "json-limits",
        "json-empty",
    ],
)
def test_resources(text: str, expected: dict[str, dict[str, str]]) -> None:
    assert settingvalues.parse_resources(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("cpu", "is not name=quantity"),
        ("cpu=lots", "is not a resource quantity"),
        ('{"cpu": ', "invalid JSON"),
        ('["cpu"]', "must be a JSON object"),
        ('{"requests": "cpu"}', "requests must be an object"),
        ("bad name=1", "is not a resource name"),
    ],
    ids=["no-value", "bad-quantity", "broken-json", "json-list", "bad-section", "bad-name"],
)
def test_bad_resources_name_the_setting(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match="CD_DAEMON_RESOURCES") as info:
        settingvalues.parse_resources(text)
    assert fragment in str(info.value)


def test_managed_namespaces_put_the_driver_namespace_first_once() -> None:
    cfg = config.ControllerConfig(
        daemon=builders.SETTINGS, additional_namespaces=("old", "driver", "other")
    )
    assert cfg.managed_namespaces == ("driver", "old", "other")
    assert cfg.driver_namespace == "driver"


@pytest.mark.parametrize("value", [0, -1.0])
def test_check_positive(value: float) -> None:
    with pytest.raises(ConfigError, match="--workers: must be greater than 0"):
        settingvalues.check_positive("--workers", value)


def test_check_non_negative() -> None:
    settingvalues.check_non_negative("--status-coalesce-window", 0)
    with pytest.raises(ConfigError, match="must not be negative"):
        settingvalues.check_non_negative("--status-coalesce-window", -0.1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ()),
        (" ", ()),
        ("CD_DNS_SUFFIX=imex.example.com", (("CD_DNS_SUFFIX", "imex.example.com"),)),
        (" B = 2 ,, A=1,", (("B", "2"), ("A", "1"))),
        ("EMPTY=", (("EMPTY", ""),)),
        ('{"LIST": "a,b", "X": "="}', (("LIST", "a,b"), ("X", "="))),
    ],
)
def test_policy_env(text: str, expected: tuple[tuple[str, str], ...]) -> None:
    assert settingvalues.parse_policy_env(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("CD_DNS_SUFFIX", "'CD_DNS_SUFFIX' is not NAME=value"),
        ("1X=a", "'1X' is not an environment variable name"),
        ("A-B=a", "'A-B' is not an environment variable name"),
        ("INDEX_POLICY=stable-hash", "INDEX_POLICY is set by the DaemonSet itself"),
        ("COMPUTE_DOMAIN_UUID=x", "COMPUTE_DOMAIN_UUID is set by the DaemonSet itself"),
        ("A=1,A=2", "A is given twice"),
        ("{bad", "invalid JSON"),
        ('{"A": 1}', "must be a JSON object of strings"),
    ],
)
def test_bad_policy_env_names_the_setting(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        settingvalues.parse_policy_env(text)
    assert info.value.field == "CD_DAEMON_POLICY_ENV"
    assert fragment in info.value.reason


def test_policy_names_are_trimmed_and_must_be_one_word() -> None:
    assert settingvalues.parse_policy_name("INDEX_POLICY", " stable-hash ") == "stable-hash"
    assert settingvalues.parse_policy_name("INDEX_POLICY", "") == ""
    with pytest.raises(ConfigError, match=r"^DNS_NAME_POLICY: 'my policy' is not a policy name"):
        settingvalues.parse_policy_name("DNS_NAME_POLICY", "my policy")
