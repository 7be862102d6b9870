"""The clique refresh's pure decisions and the settings that drive it."""

from __future__ import annotations

import pytest

from computedomain.api.errors import ConfigError
from computedomain.kubeletplugin import cliquelabel, cliquerefresh
from computedomain.kubeletplugin import config as cfg

A = "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.1"
B = "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17.2"


@pytest.mark.parametrize(
    ("current", "found", "adopted"),
    [(A, B, True), (A, A, False), (A, "", False), ("", A, True), ("", "", False)],
    ids=["changed", "same", "lost-is-ignored", "gained", "still-none"],
)
def test_adopt_only_a_non_empty_different_clique(current: str, found: str, adopted: bool) -> None:
    assert cliquerefresh.adopt(current, found) is adopted


def test_the_event_message_names_both_cliques() -> None:
    assert f"from {A} to {B}" in cliquerefresh.change_message(A, B)
    assert "from (none) to" in cliquerefresh.change_message("", B)


def test_label_patches_set_and_null_the_key() -> None:
    assert cliquelabel.patch(A) == {"metadata": {"labels": {"nvidia.com/gpu.clique": A}}}
    assert cliquelabel.patch(None) == {"metadata": {"labels": {"nvidia.com/gpu.clique": None}}}


def test_settings_defaults_and_env() -> None:
    default = cfg.parse([], {"NODE_NAME": "n"})
    assert (default.clique_id_refresh_interval, default.gpu_clique_label_enabled) == (600.0, False)
    assert default.fake_nvml_profile_file is None
    env = {
        "NODE_NAME": "n",
        "CLIQUE_ID_REFRESH_INTERVAL": "2s",
        "GPU_CLIQUE_LABEL_ENABLED": "true",
        "FAKE_NVML_PROFILE_FILE": "/driver-root/profile.json",
    }
    chosen = cfg.parse([], env)
    assert (chosen.clique_id_refresh_interval, chosen.gpu_clique_label_enabled) == (2.0, True)
    assert str(chosen.fake_nvml_profile_file) == "/driver-root/profile.json"
    flagged = cfg.parse(["--clique-id-refresh-interval=250ms"], env)
    assert flagged.clique_id_refresh_interval == 0.25


@pytest.mark.parametrize("value", ["0s", "-1m"])
def test_a_refresh_interval_must_be_positive(value: str) -> None:
    with pytest.raises(ConfigError, match="CLIQUE_ID_REFRESH_INTERVAL: must be positive"):
        cfg.parse([], {"NODE_NAME": "n", "CLIQUE_ID_REFRESH_INTERVAL": value})
