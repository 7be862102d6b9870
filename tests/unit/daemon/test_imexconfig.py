"""Rendering upstream's IMEX config template."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.api.errors import ConfigError
from computedomain.daemon import imexconfig
from computedomain.kubeletplugin import daemonclaims


def test_the_plugins_template_renders_upstreams_keys(tmp_path: Path) -> None:
    (tmp_path / "imexd.cfg.tmpl").write_text(daemonclaims.template_bytes().decode())
    path = imexconfig.write_config(tmp_path, pod_ip="10.1.2.3")
    assert path == tmp_path / "imexd.cfg"
    config = imexconfig.parse(path.read_text())
    assert config["IMEX_NODE_CONFIG_FILE"] == str(tmp_path / "nodes.cfg")
    assert config["IMEX_CMD_BIND_INTERFACE_IP"] == "10.1.2.3"
    assert config["SERVER_PORT"] == "50000"
    assert config["IMEX_CMD_PORT"] == "50005"
    assert config["IMEX_CMD_ENABLED"] == "1"
    assert config["DAEMONIZE"] == "0"
    assert config["BIND_INTERFACE_IP"] == ""
    assert config["IMEX_WAIT_FOR_QUORUM"] == "RECOVERY"
    assert "{{" not in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)


@pytest.mark.parametrize(
    "spelling",
    [
        "{{ .IMEXCmdBindInterfaceIP }}",
        "{{.IMEXCmdBindInterfaceIP}}",
        "{{- .IMEXCmdBindInterfaceIP -}}",
    ],
)
def test_go_template_spellings_of_the_fields(spelling: str) -> None:
    text = imexconfig.render(f"X={spelling}\n", nodes_config_path="/n", cmd_bind_ip="1.2.3.4")
    assert text == "X=1.2.3.4\n"


def test_an_unknown_action_is_a_config_error_naming_the_file() -> None:
    with pytest.raises(ConfigError, match=r"imexd\.cfg\.tmpl.*\{\{ \.Other \}\}"):
        imexconfig.render("X={{ .Other }}\n", nodes_config_path="/n", cmd_bind_ip="1.2.3.4")


def test_a_missing_template_says_who_places_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="kubelet plugin"):
        imexconfig.write_config(tmp_path, pod_ip="10.1.2.3")
