"""``x-kubernetes-validations`` CEL rules of a CRD schema: compiled once, evaluated per write.

Called by :class:`.schema.StructuralSchema`; compiles through :mod:`computedomain_sim.cel`.
Semantics follow apiextensions-apiserver ``pkg/apiserver/schema/cel/validation.go``:

- ``self`` is the node's value (``number`` fields as doubles), ``oldSelf`` the correlated old
  value (object keys; list-type=map items by their keys). A rule that references ``oldSelf`` is a
  transition rule and runs only on update when the old value exists.
- Null values are not validated. A rule that is false yields, by ``reason``, FieldValueInvalid
  (default), Forbidden, Required or Duplicate at the node's path plus ``fieldPath``, with the
  ``messageExpression`` result, else ``message``, else ``failed rule: <rule>``; the value is
  omitted for objects and arrays (``spec: Invalid value: A computeDomain.spec is immutable``).
- A runtime error reads ``<error> evaluating rule: <rule or message>``, or for a missing overload
  ``'no such overload': call arguments did not match a supported operator, function or macro
  signature for rule: ...``, with the schema type as the value.
- Ratcheting: on update a non-transition rule's failure at an unchanged node is dropped, so
  such a rule is not evaluated there; nor is the immutability rule (``self == oldSelf``), which
  holds wherever the value did not change.

Not modelled: the cost budget, ``optionalOldSelf`` (treated as a plain transition rule),
``date-time``/``duration`` string formats as CEL timestamps, and list-type set/map equality
ignoring order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from computedomain_sim import cel
from computedomain_sim.apiserver import schema_messages as msg
from computedomain_sim.apiserver.schema_nodes import Node, SchemaError
from computedomain_sim.apiserver.schema_validators import (
    NO_OLD,
    child_path,
    correlate_list,
    field_name,
    json_equal,
)
from computedomain_sim.apiserver.status import FieldCause

CelCheck = Callable[[Any, Any, str, list[FieldCause]], None]
_VARIABLES: Final = ("self", "oldSelf")
_REASONS: Final = frozenset(
    {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}
)
_STRING_LITERAL = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"")
_OLD_SELF = re.compile(r"\boldSelf\b")
_FIELD_PATH_PART = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:\\.|[^'\\])*)'\]")
_MAX_MESSAGE: Final = 5120
_SPACE = re.compile(r"\s+")
_IMMUTABILITY: Final = frozenset({"self==oldSelf", "oldSelf==self"})


class _Rule:
    __slots__ = (
        "error_text", "field_path", "immutability", "message", "message_expr", "program", "reason"
    )  # fmt: skip

    def __init__(self, node: Node, index: int, raw: Mapping[str, Any]) -> None:
        where = f"{node.path}.x-kubernetes-validations[{index}]"
        rule = raw.get("rule")
        if not isinstance(rule, str) or not rule.strip():
            raise SchemaError(f"{where}.rule: Required value")
        self.program = _compile(rule, f"{where}.rule")
        self.immutability = _SPACE.sub("", rule) in _IMMUTABILITY
        if self.program.return_type not in ("BOOL", "DYN"):
            raise SchemaError(
                f"{where}.rule: Invalid value: {msg.go_quote(rule)}: must evaluate to a bool"
            )
        message = raw.get("message") or ""
        if not isinstance(message, str) or "\n" in message.strip():
            raise SchemaError(
                f"{where}.message: Invalid value: message must not contain line breaks"
            )
        self.message = message.strip()
        expression = raw.get("messageExpression") or ""
        self.message_expr = (
            _compile(expression, f"{where}.messageExpression") if expression else None
        )
        reason = raw.get("reason") or "FieldValueInvalid"
        if reason not in _REASONS:
            raise SchemaError(
                f'{where}.reason: Unsupported value: "{reason}": supported values: '
                '"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", '
                '"FieldValueRequired"'
            )
        self.reason = reason
        self.field_path = _normalize_field_path(node, raw.get("fieldPath") or "", where)
        # ruleErrorString: the message when there is one, else the rule.
        self.error_text = self.message or rule.strip()

    @property
    def transition(self) -> bool:
        """A transition rule references ``oldSelf`` (kube decides on the rule alone)."""
        return references_old_self(self.program.expression)


def references_old_self(expression: str) -> bool:
    """Whether ``expression`` mentions the ``oldSelf`` variable outside string literals."""
    return _OLD_SELF.search(_STRING_LITERAL.sub("''", expression)) is not None


def _compile(expression: str, where: str) -> cel.CelProgram:
    try:
        return cel.compile_expression(expression, variables=_VARIABLES)
    except cel.CelError as exc:
        raise SchemaError(
            f"{where}: Invalid value: {msg.go_quote(expression)}: compilation failed: {exc.detail}"
        ) from exc


def _normalize_field_path(node: Node, field_path: str, where: str) -> str:
    """``.spec['a.b'].c`` → ``spec.a.b.c``, checked against the schema under ``node``."""
    if not field_path:
        return ""
    parts: list[str] = []
    position, current = 0, node
    while position < len(field_path):
        match = _FIELD_PATH_PART.match(field_path, position)
        if match is None:
            raise SchemaError(f"{where}.fieldPath: Invalid value: {msg.go_quote(field_path)}")
        name = match.group(1) if match.group(1) is not None else match.group(2)
        sub = current.properties.get(name) if current.properties else current.additional
        if sub is None:
            raise SchemaError(
                f"{where}.fieldPath: Invalid value: {msg.go_quote(field_path)}: "
                f"does not refer to a valid field"
            )
        parts.append(name)
        position, current = match.end(), sub
    return ".".join(parts)


def has_rules(node: Node | None) -> bool:
    if node is None:
        return False
    return bool(node.rules) or (
        has_rules(node.items)
        or has_rules(node.additional)
        or any(has_rules(sub) for sub in node.properties.values())
    )


def compile_converter(node: Node | None) -> Callable[[Any], Any] | None:
    """A function that turns JSON into CEL input for ``node`` (ints in ``number`` fields become
    doubles), or ``None`` when the data can be passed as it is."""
    if node is None:
        return None
    if node.type == "number":
        return lambda v: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
    items = compile_converter(node.items)
    additional = compile_converter(node.additional)
    properties = {
        name: conv for name, sub in node.properties.items() if (conv := compile_converter(sub))
    }
    if items is None and additional is None and not properties:
        return None

    def convert(value: Any) -> Any:
        if isinstance(value, list) and items is not None:
            return [items(v) for v in value]
        if isinstance(value, dict):
            if additional is not None:
                return {k: additional(v) for k, v in value.items()}
            return {k: (properties[k](v) if k in properties else v) for k, v in value.items()}
        return value

    return convert


def compile_cel_checks(node: Node) -> CelCheck | None:
    """The CEL pass for ``node``'s subtree, or ``None`` when it has no rules.

    Raises :class:`SchemaError` for a rule that does not compile (naming rule and field).
    """
    if not has_rules(node):
        return None
    rules = tuple(_Rule(node, i, raw) for i, raw in enumerate(node.rules))
    transitions = tuple(rule.transition for rule in rules)
    convert = compile_converter(node) or (lambda v: v)
    items = compile_cel_checks(node.items) if node.items is not None else None
    additional = compile_cel_checks(node.additional) if node.additional is not None else None
    properties = tuple(
        (name, sub_check)
        for name, sub in node.properties.items()
        if (sub_check := compile_cel_checks(sub)) is not None
    )
    correlatable = node.map_type in ("", "granular", "atomic")
    keys = node.list_map_keys
    type_name = node.type

    def check(value: Any, old: Any, path: str, out: list[FieldCause]) -> None:
        if value is None:
            return
        if old is None:
            old = NO_OLD
        if rules:
            unchanged = old is not NO_OLD and json_equal(value, old)
            activation: dict[str, Any] | None = None
            for rule, transition in zip(rules, transitions, strict=True):
                if transition and old is NO_OLD:
                    continue
                if unchanged and (not transition or rule.immutability):
                    continue  # its failure would be ratcheted, or it holds
                if activation is None:
                    activation = {"self": convert(value)}
                    if old is not NO_OLD:
                        activation["oldSelf"] = convert(old)
                cause = _run(rule, activation, value, type_name, path)
                if cause is not None:
                    out.append(cause)
        if isinstance(value, dict):
            old_map = old if correlatable and isinstance(old, dict) else None
            if additional is not None:
                for key, sub in value.items():
                    old_sub = old_map.get(key, NO_OLD) if old_map is not None else NO_OLD
                    additional(sub, old_sub, child_path(path, key), out)
            for name, sub_check in properties:
                if name in value:
                    old_sub = old_map.get(name, NO_OLD) if old_map is not None else NO_OLD
                    sub_check(value[name], old_sub, child_path(path, name), out)
        elif isinstance(value, list) and items is not None:
            old_items = correlate_list(node, old) if old is not NO_OLD else None
            for i, item in enumerate(value):
                old_item = NO_OLD
                if old_items is not None and isinstance(item, dict):
                    old_item = old_items.get(tuple(item.get(k) for k in keys), NO_OLD)
                items(item, old_item, f"{path}[{i}]", out)

    return check


def _run(
    rule: _Rule, activation: dict[str, Any], value: Any, type_name: str, path: str
) -> FieldCause | None:
    """Evaluate one rule; the cause it yields, if any. Never raises."""
    field = field_name(path)
    try:
        result = rule.program.evaluate(activation)
    except cel.CelEvaluationError as exc:
        if exc.detail.startswith("no such overload"):
            detail = (
                f"'{exc.detail}': call arguments did not match a supported operator, function "
                f"or macro signature for rule: {rule.error_text}"
            )
        else:
            detail = f"{exc.detail} evaluating rule: {rule.error_text}"
        return msg.invalid(field, type_name, detail)
    if result is True:
        return None
    if result is not False:
        detail = f"rule did not evaluate to a bool evaluating rule: {rule.error_text}"
        return msg.invalid(field, type_name, detail)
    if rule.field_path:
        field = child_path(path, rule.field_path)
    detail = _message(rule, activation) or rule.message or f"failed rule: {rule.error_text}"
    shown = msg.OMIT if type_name in ("object", "array") else value
    if rule.reason == "FieldValueForbidden":
        return msg.forbidden(field, detail)
    if rule.reason == "FieldValueRequired":
        return msg.required(field, detail)
    if rule.reason == "FieldValueDuplicate":
        return msg.duplicate(field, shown)
    return msg.invalid(field, shown, detail)


def _message(rule: _Rule, activation: dict[str, Any]) -> str:
    """The ``messageExpression`` result, or ``""`` when absent or unusable (kube falls back)."""
    if rule.message_expr is None:
        return ""
    try:
        text = rule.message_expr.evaluate(activation)
    except cel.CelEvaluationError:
        return ""
    if not isinstance(text, str):
        return ""
    text = text.strip()
    if not text or "\n" in text or len(text) > _MAX_MESSAGE:
        return ""
    return text
