"""Label and field selectors: parsing (with apimachinery's error wording) and matching.

Called by :mod:`.handlers` for list/watch/deletecollection query parameters and by
:mod:`.watch` to filter events. Pure functions; parse errors raise :class:`SelectorError`,
which the HTTP layer turns into 400 BadRequest.

Label selector grammar (as ``labels.Parse``): comma-separated requirements ``k``, ``!k``,
``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k>n``, ``k<n``. Field
selectors (as ``fields.ParseSelector``): ``k=v``, ``k==v``, ``k!=v`` with ``\\`` escapes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import attrs

_SPECIAL = "!=,()<> \t\n\r\f\v"
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class SelectorError(ValueError):
    """A selector that does not parse; the message is apimachinery's."""


def qualified_name_errors(key: str) -> list[str]:
    """Errors of a label key (``[prefix/]name``) as apimachinery words them; empty if valid."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix):
            errs.append(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            )
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
            "prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    elif not _NAME.match(name):
        errs.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Errors of a label value as apimachinery words them; empty if valid."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if value and not _NAME.match(value):
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return errs


@attrs.frozen
class Requirement:
    key: str
    op: str  # "exists", "!", "=", "!=", "in", "notin", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        op = self.op
        if op == "exists":
            return value is not None
        if op == "!":
            return value is None
        if op == "=":
            return value is not None and value == self.values[0]
        if op == "!=":
            return value is None or value != self.values[0]
        if op == "in":
            return value is not None and value in self.values
        if op == "notin":
            return value is None or value not in self.values
        if value is None:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == "gt" else have < want


@attrs.frozen
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_OPS = ("!=", "==", "=", "!", ",", "(", ")", "<", ">")


def _lex(text: str) -> list[tuple[str, str]]:
    """Tokens as (kind, text); kind is the operator itself, "id", "in", "notin" or "end"."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in _SPECIAL:
            for op in _OPS:
                if text.startswith(op, i):
                    out.append((op, op))
                    i += len(op)
                    break
            else:  # pragma: no cover - every special char is an operator prefix
                raise SelectorError(f"error expected: keyword found '{ch}'")
            continue
        j = i
        while j < n and text[j] not in _SPECIAL:
            j += 1
        word = text[i:j]
        out.append((word if word in ("in", "notin") else "id", word))
        i = j
    out.append(("end", ""))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _lex(text)
        self.pos = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.pos]

    def take(self) -> tuple[str, str]:
        tok = self.toks[self.pos]
        if tok[0] != "end":
            self.pos += 1
        return tok

    def parse(self) -> LabelSelector:
        reqs: list[Requirement] = []
        while True:
            kind, text = self.peek()
            if kind in ("id", "!"):
                reqs.append(self.requirement())
                kind, text = self.take()
                if kind == "end":
                    break
                if kind == ",":
                    nkind, ntext = self.peek()
                    if nkind not in ("id", "!"):
                        raise SelectorError(f"found '{ntext}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{text}', expected: ',' or 'end of string'")
            if kind == "end":
                break
            raise SelectorError(f"found '{text}', expected: !, identifier, or 'end of string'")
        return LabelSelector(tuple(reqs))

    def requirement(self) -> Requirement:
        negated = False
        kind, text = self.take()
        if kind == "!":
            negated = True
            kind, text = self.take()
        if kind != "id":
            raise SelectorError(f"found '{text}', expected: identifier")
        key = text
        errs = qualified_name_errors(key)
        if errs:
            raise SelectorError(f"key: Invalid value: {_q(key)}: {'; '.join(errs)}")
        nkind, _ = self.peek()
        if nkind in ("end", ","):
            return Requirement(key, "!" if negated else "exists")
        if negated:
            raise SelectorError(f"found '{self.peek()[1]}', expected: ',' or 'end of string'")
        kind, text = self.take()
        op = {"=": "=", "==": "=", "!=": "!=", "in": "in", "notin": "notin", ">": "gt"}
        op.update({"<": "lt"})
        if kind not in op:
            raise SelectorError(f"found '{text}', expected: '=', '!=', '==', 'in', notin'")
        operator = op[kind]
        if operator in ("in", "notin"):
            values = self.value_set()
            if not values:
                raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
        else:
            values = (self.exact_value(),)
            if operator in ("gt", "lt"):
                try:
                    int(values[0])
                except ValueError:
                    raise SelectorError(
                        "for 'Gt', 'Lt' operators, the value must be an integer"
                    ) from None
        for v in values:
            errs = label_value_errors(v)
            if errs and operator not in ("gt", "lt"):
                raise SelectorError(f"values[0][{key}]: Invalid value: {_q(v)}: {errs[0]}")
        return Requirement(key, operator, tuple(values))

    def value_set(self) -> tuple[str, ...]:
        kind, text = self.take()
        if kind != "(":
            raise SelectorError(f"found '{text}', expected: '('")
        values: list[str] = []
        kind, text = self.peek()
        if kind == ")":
            self.take()
            return ()
        while True:
            kind, text = self.peek()
            if kind in ("id", "in", "notin"):
                self.take()
                values.append(text)
                kind, text = self.peek()
            else:
                values.append("")
            kind, text = self.take()
            if kind == ")":
                return tuple(values)
            if kind != ",":
                raise SelectorError(f"found '{text}', expected: ',', or identifier")

    def exact_value(self) -> str:
        kind, text = self.peek()
        if kind in ("end", ","):
            return ""
        kind, text = self.take()
        if kind in ("id", "in", "notin"):
            return text
        raise SelectorError(f"found '{text}', expected: identifier")


def _q(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_labels(text: str) -> LabelSelector:
    """Parse a label selector string; pure; raises :class:`SelectorError`."""
    return _Parser(text).parse()


# ---------------------------------------------------------------- field selectors


@attrs.frozen
class FieldSelector:
    terms: tuple[tuple[str, str, str], ...] = ()  # (field, "=" | "!=", value)

    def matches(self, get: Callable[[str], str]) -> bool:
        for field, op, value in self.terms:
            have = get(field)
            if (have == value) != (op == "="):
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.terms

    def fields(self) -> tuple[str, ...]:
        return tuple(t[0] for t in self.terms)

    def exact(self, field: str) -> str | None:
        """The value ``field`` must equal, if the selector pins it (index hint)."""
        for f, op, value in self.terms:
            if f == field and op == "=":
                return value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text):
                raise SelectorError("invalid field selector: trailing backslash")
            nxt = text[i + 1]
            if nxt not in "\\,=!":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{nxt}")
            out.append(nxt)
            i += 2
            continue
        if ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped {ch} in value")
        out.append(ch)
        i += 1
    return "".join(out)


def parse_fields(text: str) -> FieldSelector:
    """Parse a field selector string; pure; raises :class:`SelectorError`."""
    if not text.strip():
        return FieldSelector()
    terms: list[tuple[str, str, str]] = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for op_text, op in (("!=", "!="), ("==", "="), ("=", "=")):
            idx = _find_unescaped(part, op_text)
            if idx >= 0:
                field = part[:idx].strip()
                value = _unescape(part[idx + len(op_text) :])
                terms.append((field, op, value))
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(terms))


def _find_unescaped(text: str, needle: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(needle, i):
            return i
        i += 1
    return -1


def field_value(obj: Mapping[str, object], path: str) -> str:
    """The string form of ``obj`` at dotted ``path`` as field selectors compare it
    ("" when absent; booleans as ``true``/``false``). Pure."""
    cur: object = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, (dict, list)):
        return ""
    return str(cur)
