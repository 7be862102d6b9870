"""README.md and CONTRIBUTING.md say only what is true of this tree: the two commands come
first, every path, make target, launcher and plugin they name exists, every cause the doctor
can report is explained, and the test commands they give select tests that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from computedomain.cli.doctor.findings import Cause

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
CONTRIBUTING = (REPO / "CONTRIBUTING.md").read_text()
DOCS = {"README.md": README, "CONTRIBUTING.md": CONTRIBUTING}


def test_the_two_commands_come_first() -> None:
    first_block = README.split("```", 2)[1]
    assert [line.split("#")[0].strip() for line in first_block.strip().splitlines()[1:]] == [
        "make demo",
        "make test",
    ]


@pytest.mark.parametrize("cause", list(Cause), ids=[c.value for c in Cause])
def test_every_doctor_cause_is_explained(cause: Cause) -> None:
    assert f"| `{cause.value}` |" in README


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_named_paths_exist(doc: str) -> None:
    paths = set(
        re.findall(r"(?<![\w/.-])((?:deployments|plugins|docs|bin|tests)/[\w./-]*\w)", DOCS[doc])
    )
    assert paths, doc
    missing = sorted(p for p in paths if not (REPO / p).exists())
    assert not missing, f"{doc} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_make_targets_exist(doc: str) -> None:
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = set(re.findall(r"`make ([\w-]+)`", DOCS[doc])) | set(
        re.findall(r"^make ([\w-]+)", DOCS[doc], re.M)
    )
    assert named
    assert named <= targets, named - targets


def test_program_names_and_upstream_aliases_exist_in_bin() -> None:
    for program in re.findall(r"`((?:cd|compute-domain)-[\w-]+)`", README):
        if program in ("compute-domain-daemon-service-account",):
            continue
        assert (REPO / "bin" / program).is_file(), program


def test_the_plugins_contributing_names_are_the_examples() -> None:
    for example in ("index-stablehash", "dns-suffix", "channels-per-domain"):
        assert f"`{example}`" in CONTRIBUTING
        assert (REPO / "plugins" / example / "pyproject.toml").is_file()


def test_links_resolve() -> None:
    for doc, text in DOCS.items():
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            assert (REPO / target).exists(), f"{doc} links to missing {target}"
