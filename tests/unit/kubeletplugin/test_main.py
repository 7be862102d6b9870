"""The command's configuration errors: argparse's usage and message on stderr, exit status 2."""

from __future__ import annotations

import pytest

from computedomain.kubeletplugin import main


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        ([], {}, "cd-kubelet-plugin: error: --node-name/NODE_NAME: is required"),
        (
            [],
            {"NODE_NAME": "n", "FAKE_NVML_PROFILE": "a100"},
            "cd-kubelet-plugin: error: --fake-nvml-profile/FAKE_NVML_PROFILE: unknown profile "
            "'a100' (valid: gb200, h100, fabric-in-progress, fabric-failure, mixed-cliques, "
            "hgx-h100-partition-pending, hgx-b200-partition-pending)",
        ),
        (
            ["--nvml-backend", "gpu"],
            {"NODE_NAME": "n"},
            "cd-kubelet-plugin: error: --nvml-backend/NVML_BACKEND",
        ),
    ],
)
def test_configuration_errors(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    for name in ("NODE_NAME", "FAKE_NVML_PROFILE", "NVML_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        main.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: cd-kubelet-plugin")
    assert message in err
