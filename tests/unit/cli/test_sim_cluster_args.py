"""``computedomain sim up|run`` arguments: what cluster they ask for (``up`` passes its
flags on to ``run``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.api import names
from computedomain.cli import main
from computedomain_sim.cli import sim_cluster, sim_host
from computedomain_sim.cluster.cluster import ClusterConfig


def test_the_daemons_get_the_imex_stand_ins_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    args = main.build_parser().parse_args(["sim", "run", f"--state-dir={tmp_path / 's'}"])
    config = sim_host.cluster_config(args)
    assert config.imex_path is not None
    directory = Path(config.imex_path)
    assert directory.is_relative_to(tmp_path / "cache")
    for binary in (names.IMEX_BINARY, names.IMEX_CTL_BINARY):
        assert (directory / binary).is_file()


def test_an_explicit_imex_path_wins(tmp_path: Path) -> None:
    up = main.build_parser().parse_args(
        ["sim", "up", f"--state-dir={tmp_path}", "--imex-path=/opt/imex/bin", "--racks=3"]
    )
    run_argv = ["sim", "run", *sim_cluster.run_arguments(up)]
    args = main.build_parser(run_argv).parse_args(run_argv)
    config = sim_host.cluster_config(args)
    assert config.imex_path == "/opt/imex/bin"
    assert config.topology.racks == 3


def run_config_of(up_argv: list[str]) -> ClusterConfig:
    """The cluster ``sim run`` is asked for when ``sim up`` is given ``up_argv``."""
    up = main.build_parser().parse_args(["sim", "up", *up_argv])
    run_argv = ["sim", "run", *sim_cluster.run_arguments(up)]
    return sim_host.cluster_config(main.build_parser(run_argv).parse_args(run_argv))


def test_manifests_none_installs_nothing(tmp_path: Path) -> None:
    config = run_config_of([f"--state-dir={tmp_path}", "--manifests=none", "--imex-path=/x"])
    assert config.manifests is None


def test_the_default_manifests_are_the_sim_overlay(tmp_path: Path) -> None:
    config = run_config_of([f"--state-dir={tmp_path}", "--imex-path=/x"])
    assert config.manifests is not None
    assert config.manifests.parts[-2:] == ("overlays", "sim")


def test_a_directory_called_none_is_named_with_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = run_config_of([f"--state-dir={tmp_path}", "--manifests=./none", "--imex-path=/x"])
    assert config.manifests == tmp_path / "none"
