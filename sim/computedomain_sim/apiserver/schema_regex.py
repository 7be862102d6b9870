"""CRD ``pattern`` regexes: RE2 semantics (what kube-apiserver's Go ``regexp`` accepts) on Python's
``re``.

Called by :mod:`.schema_nodes` when it compiles a schema. Go's RE2 has no look-around and no
backreferences, so a CRD using them is rejected at compile time, as kube-apiserver rejects it.
``$`` and ``\\z`` are translated so that they match only at the very end of the string (Go's ``$``
without the ``m`` flag does not match before a trailing newline, Python's does). Matching is a
search, not a full match, as Go's ``MatchString``.
"""

from __future__ import annotations

import re

_UNSUPPORTED = (
    ("(?=", "look-ahead"),
    ("(?!", "negative look-ahead"),
    ("(?<=", "look-behind"),
    ("(?<!", "negative look-behind"),
)


class PatternError(ValueError):
    """The pattern is not a valid RE2 regular expression."""


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` with RE2 rules; pure. Raises :class:`PatternError`."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.isdigit() and nxt != "0" and not in_class:
                msg = f"invalid escape sequence: `\\{nxt}` (backreferences are not supported)"
                raise PatternError(msg)
            out.append("\\Z" if nxt == "z" and not in_class else ch + nxt)
            i += 2
            continue
        if not in_class:
            for prefix, name in _UNSUPPORTED:
                if pattern.startswith(prefix, i):
                    msg = f"invalid or unsupported Perl syntax: `{prefix}` ({name})"
                    raise PatternError(msg)
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            # A ']' right after '[' or '[^' is a literal in both dialects.
            if pattern.startswith("^", i + 1):
                out.append("^")
                i += 1
            if pattern.startswith("]", i + 1):
                out.append("\\]")
                i += 1
        elif ch == "]" and in_class:
            in_class = False
            out.append(ch)
        elif ch == "$" and not in_class:
            out.append("\\Z")
        else:
            out.append(ch)
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as exc:
        msg = f"error parsing regexp: {exc}"
        raise PatternError(msg) from exc
