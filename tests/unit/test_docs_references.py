"""Every document the code points at is in this repository.

Code, docstrings, comments, the Makefile, the manifests and the example plugins may name a
Markdown file (``docs/compatibility.md#checkpoint``); each such name must resolve to a file of
the repository (from the repository root, from the naming file's folder, or in ``docs/``), and
an ``#anchor`` must be one of that file's headings. Section signs and paths into documents kept
outside the repository have no place here: a maintainer could follow neither. The Markdown
files of the repository are held to the same rule for their own links.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# What is scanned: the product, the simulation, tests, benchmarks, plugins, launchers, manifests.
SCANNED = ("computedomain", "sim", "tests", "bench", "plugins", "bin", "deployments", "docs")
SCANNED_FILES = ("Makefile", "README.md", "CONTRIBUTING.md")
SKIPPED_DIRS = frozenset({"__pycache__", ".venv", "build", "dist", ".mypy_cache", ".ruff_cache"})
MAX_BYTES = 1_000_000

SECTION_SIGN = "\u00a7"
OUTSIDE = ("shared/spec", "/work/shared")
MD_REFERENCE = re.compile(r"(?<![\w/.-])((?:\.\./)*(?:[\w-]+/)*[\w.-]*\w\.md)(?:#([\w-]+))?\b")
MD_LINK = re.compile(r"\]\(([^)\s]*)\)")
LABELLED = re.compile(
    r"\b(?:invariants?|hazards?) +((?:[HSAFP]\d{1,2}(?:-[HSAFP]?\d{1,2})?(?:, *| and )?)+)"
)


def _files() -> Iterator[Path]:
    for top in SCANNED:
        root = REPO / top
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            parts = set(path.relative_to(REPO).parts)
            if parts & SKIPPED_DIRS or any(p.endswith(".egg-info") for p in parts):
                continue
            if path.is_file() and path.stat().st_size <= MAX_BYTES:
                yield path
    for name in SCANNED_FILES:
        if (REPO / name).is_file():
            yield REPO / name


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


SELF = Path(__file__).resolve()  # its examples are deliberately broken
FILES = [(p, t) for p in _files() if p.resolve() != SELF and (t := _text(p)) is not None]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors of a Markdown document's headings (repeats get ``-1``, ``-2``...)."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if in_code or not match:
            continue
        base = slug(match.group(1))
        seen = counts.get(base, 0)
        counts[base] = seen + 1
        found.add(base if seen == 0 else f"{base}-{seen}")
    return found


def resolve(reference: str, source: Path) -> Path | None:
    """The repository file a reference names, or None."""
    candidates = [source.parent / reference, REPO / reference]
    if "/" not in reference:
        candidates.append(REPO / "docs" / reference)
    for candidate in candidates:
        if candidate.is_file() and candidate.resolve().is_relative_to(REPO):
            return candidate
    return None


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _where(path: Path, text: str, offset: int) -> str:
    return f"{path.relative_to(REPO)}:{_line(text, offset)}"


def test_the_scan_covers_code_and_docs() -> None:
    names = {p.relative_to(REPO).as_posix() for p, _ in FILES}
    assert "computedomain/api/names.py" in names
    assert "docs/compatibility.md" in names
    assert "Makefile" in names


def test_no_section_signs() -> None:
    found = [
        _where(path, text, m.start())
        for path, text in FILES
        for m in re.finditer(SECTION_SIGN, text)
    ]
    assert not found, f"section references to documents outside docs/: {found}"


def test_no_paths_into_documents_outside_the_repository() -> None:
    found = [
        _where(path, text, m.start())
        for path, text in FILES
        for outside in OUTSIDE
        for m in re.finditer(re.escape(outside), text)
    ]
    assert not found, found


def test_markdown_references_resolve() -> None:
    broken = []
    for path, text in FILES:
        for match in MD_REFERENCE.finditer(text):
            reference, anchor = match.group(1), match.group(2)
            target = resolve(reference, path)
            if target is None:
                broken.append(f"{_where(path, text, match.start())}: {reference} is not a file")
            elif anchor and anchor not in anchors(target.read_text(encoding="utf-8")):
                broken.append(f"{_where(path, text, match.start())}: no #{anchor} in {reference}")
    assert not broken, "\n".join(broken)


def test_named_invariants_and_hazards_are_defined() -> None:
    """``invariant S7``, ``invariants F1-F6``, ``hazard H2``: each label is defined (as
    ``**S7**``) in docs/compatibility.md, where the code's readers find it."""
    contract = (REPO / "docs" / "compatibility.md").read_text(encoding="utf-8")
    defined = set(re.findall(r"\*\*([HSAFP]\d{1,2})\*\*", contract))
    missing = []
    for path, text in FILES:
        for match in LABELLED.finditer(text):
            for label in _labels(match.group(1)):
                if label not in defined:
                    missing.append(f"{_where(path, text, match.start())}: {label}")
    assert not missing, "\n".join(missing)


def _labels(listing: str) -> list[str]:
    """``F1-F6, F8`` -> F1, F2, ..., F6, F8."""
    labels = []
    for first, letter, last in re.findall(r"([HSAFP]\d{1,2})(?:-([HSAFP])?(\d{1,2}))?", listing):
        labels.append(first)
        if last:
            kind = letter or first[0]
            labels.extend(f"{kind}{n}" for n in range(int(first[1:]) + 1, int(last) + 1))
    return labels


def test_markdown_links_resolve() -> None:
    broken = []
    for path, text in FILES:
        if path.suffix != ".md":
            continue
        for match in MD_LINK.finditer(text):
            link = match.group(1)
            if not link or re.match(r"[a-z]+:", link):
                continue  # a URL
            file_part, _, anchor = link.partition("#")
            target = path if not file_part else (path.parent / file_part)
            if not target.exists():
                broken.append(f"{_where(path, text, match.start())}: {link}")
            elif anchor and anchor not in anchors(target.read_text(encoding="utf-8")):
                broken.append(f"{_where(path, text, match.start())}: no #{anchor}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Checkpoint", "checkpoint"),
        ("Stable, conflict-light membership", "stable-conflict-light-membership"),
        ("`computedomain doctor`", "computedomain-doctor"),
        (
            "Hosts-file and index changes reach nvidia-imex",
            "hosts-file-and-index-changes-reach-nvidia-imex",
        ),
    ],
)
def test_slug_follows_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_labels_expand_ranges() -> None:
    assert _labels("F1-F3, F8 and H2") == ["F1", "F2", "F3", "F8", "H2"]


def test_repeated_headings_get_numbered_anchors() -> None:
    assert anchors("# A\n## Notes\n```\n# not a heading\n```\n## Notes\n") == {
        "a",
        "notes",
        "notes-1",
    }


def test_resolve_refuses_missing_files_and_accepts_docs_names(tmp_path: Path) -> None:
    source = REPO / "computedomain" / "api" / "names.py"
    assert resolve("docs/compatibility.md", source) == REPO / "docs" / "compatibility.md"
    assert resolve("operations.md", source) == REPO / "docs" / "operations.md"
    assert resolve("not-a-document.md", source) is None
    assert resolve("../../../../../etc/x.md", source) is None
