"""A small reader of Containerfiles, enough for the static checks of ``test_containerfile.py``.

No container engine runs in CI, so the image is checked by reading its recipe: this module
splits it into stages and instructions (comments dropped, continuation lines joined), resolves
``${ARG}`` in ``FROM`` from the global ``ARG`` defaults, and matches paths against a
``.containerignore`` the way the build context is filtered (``*``, ``?`` within a component,
``**`` across components; an excluded directory excludes what is inside it).
"""

from __future__ import annotations

import fnmatch
import re
import shlex

import attrs

_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


@attrs.frozen
class Instruction:
    keyword: str  # upper case: FROM, RUN, COPY, ...
    text: str  # the arguments, continuation lines joined with single spaces

    def words(self) -> list[str]:
        return shlex.split(self.text, posix=True)

    def flags(self) -> dict[str, str]:
        """``--name=value`` options at the start (COPY --from=build, ...)."""
        result: dict[str, str] = {}
        for word in self.words():
            if not word.startswith("--"):
                break
            name, _, value = word[2:].partition("=")
            result[name] = value
        return result

    def operands(self) -> list[str]:
        return [w for w in self.words() if not w.startswith("--")]


@attrs.frozen
class Stage:
    base: str  # with global ARG defaults substituted
    name: str | None
    instructions: tuple[Instruction, ...]

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def args(self) -> dict[str, str]:
        """``ARG NAME=default`` declared in this stage."""
        result: dict[str, str] = {}
        for arg in self.all("ARG"):
            name, _, default = arg.text.partition("=")
            result[name.strip()] = shlex.split(default)[0] if default.strip() else ""
        return result

    def labels(self) -> dict[str, str]:
        result: dict[str, str] = {}
        for label in self.all("LABEL"):
            for word in label.words():
                key, _, value = word.partition("=")
                result[key] = value
        return result


@attrs.frozen
class Containerfile:
    global_args: dict[str, str]
    stages: tuple[Stage, ...]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    @property
    def final(self) -> Stage:
        return self.stages[-1]


def logical_lines(text: str) -> list[str]:
    """Instructions one per line: comment lines dropped, ``\\`` continuations joined."""
    lines: list[str] = []
    current: list[str] = []
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not current):
            continue
        if stripped.endswith("\\"):
            current.append(stripped[:-1].strip())
            continue
        current.append(stripped)
        lines.append(" ".join(part for part in current if part))
        current = []
    if current:
        lines.append(" ".join(current))
    return lines


def substitute(text: str, values: dict[str, str]) -> str:
    return _VARIABLE.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)


def parse(text: str) -> Containerfile:
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    base: str | None = None
    name: str | None = None
    body: list[Instruction] = []
    for line in logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            if base is not None:
                stages.append(Stage(base, name, tuple(body)))
            words = substitute(rest, global_args).split()
            base = words[0]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            body = []
        elif base is None and keyword == "ARG":
            key, _, default = rest.partition("=")
            global_args[key.strip()] = default.strip()
        else:
            body.append(Instruction(keyword, rest.strip()))
    if base is not None:
        stages.append(Stage(base, name, tuple(body)))
    return Containerfile(global_args, tuple(stages))


def _pattern_matches(pattern: str, path: str) -> bool:
    """Whether ``path`` (or a directory above it) matches one ignore pattern."""
    pattern_parts = pattern.strip("/").split("/")
    path_parts = path.strip("/").split("/")

    def match(p: int, q: int) -> bool:
        if p == len(pattern_parts):
            return True  # the pattern matched a directory above the rest of the path
        if q == len(path_parts):
            return False
        if pattern_parts[p] == "**":
            return any(match(p + 1, k) for k in range(q, len(path_parts) + 1))
        return fnmatch.fnmatchcase(path_parts[q], pattern_parts[p]) and match(p + 1, q + 1)

    return match(0, 0)


def ignore_patterns(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def ignored(patterns: list[str], path: str) -> bool:
    """Whether the build context leaves ``path`` out (``!`` re-inclusions are honoured)."""
    result = False
    for pattern in patterns:
        if pattern.startswith("!"):
            if _pattern_matches(pattern[1:], path):
                result = False
        elif _pattern_matches(pattern, path):
            result = True
    return result
