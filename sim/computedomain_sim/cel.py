"""One CEL engine for the embedded API server (CRD ``x-kubernetes-validations``) and the simulated
scheduler (DeviceClass and request selectors).

Callers: :mod:`computedomain_sim.apiserver.schema_cel` compiles CRD rules through
:func:`compile_expression`; the simulated scheduler calls :func:`evaluate_device_selector`.
Below this module is ``cel-expr-python`` (Google's cel-cpp runtime), with its strings and optional
extensions, which Kubernetes' CEL environment also enables.

Why this engine. kube-apiserver runs cel-go; we need the same answers from Python.
``bench/cel_engines.py`` compares the candidates on correctness and speed. ``cel``
(common-expression-language, Rust) counts ``size()`` of a string in UTF-8 bytes where CEL counts
code points, only parses at compile time (an undeclared variable or function in a CRD rule would
be accepted where kube-apiserver rejects the CRD), and has cel-go's strings extension only as
slower Python callbacks. ``celpy`` (cel-python) is correct on the core cases but much slower and
has no strings extension. cel-expr-python type-checks at compile time the way cel-go does (``1 ==
1.0`` is "found no matching overload", undeclared references are compile errors with a position),
counts code points, rejects look-around regexes (RE2, as Kubernetes), ships the strings and optional
extensions natively, and was the fastest on every case. So it is the engine.

Errors are reworded the way cel-go words them (``no such key: x``, ``no such overload``), because
kube-apiserver embeds those words in the messages kubectl prints.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from cel_expr_python import cel as _cel
from cel_expr_python.ext import ext_optional, ext_strings

__all__ = [
    "CelError",
    "CelEvaluationError",
    "CelProgram",
    "compile_expression",
    "evaluate_device_selector",
]

_CACHE_SIZE = 4096


class CelError(ValueError):
    """An expression that does not compile; the message names the expression and position."""

    def __init__(self, expression: str, detail: str) -> None:
        self.expression = expression
        self.detail = detail  # cel-go style, e.g. "ERROR: <input>:1:10: Syntax error: ..."
        super().__init__(f"CEL expression {expression!r} does not compile: {detail}")


class CelEvaluationError(ValueError):
    """An expression failed at run time (missing key, no such overload, overflow, ...).

    ``detail`` is worded as cel-go words it, e.g. ``no such key: name``.
    """

    def __init__(self, expression: str, detail: str) -> None:
        self.expression = expression
        self.detail = detail
        super().__init__(f"CEL expression {expression!r} failed: {detail}")


_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r"\s*\[[A-Z_]+\]$")
_RUNTIME_REWORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'^Key not found in map : "?(.*?)"?$'), r"no such key: \1"),
    (re.compile(r"^No matching overloads? found.*$"), "no such overload"),
    (re.compile(r"^Index error: index=(-?\d+) size=\d+$"), r"index out of bounds: \1"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^modulus by zero$"), "modulus by zero"),
)


def _clean(message: str) -> str:
    """Strip cel-cpp's absl status decoration (``INVALID_ARGUMENT: ... [INVALID_ARGUMENT]``)."""
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", message.strip()))


def _reword_runtime(message: str) -> str:
    text = _clean(message)
    for pattern, replacement in _RUNTIME_REWORDS:
        if pattern.match(text):
            return pattern.sub(replacement, text)
    return text


@functools.cache
def _environment(variables: tuple[str, ...]) -> Any:
    """One cel-cpp environment per variable set; every variable is ``dyn`` (JSON data)."""
    return _cel.NewEnv(
        variables=dict.fromkeys(variables, _cel.Type.DYN),
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
    )


class CelProgram:
    """A compiled expression; evaluate it as often as needed (a few µs for small inputs)."""

    __slots__ = ("_program", "expression", "return_type", "variables")

    def __init__(self, expression: str, variables: tuple[str, ...], program: Any) -> None:
        self.expression = expression
        self.variables = variables
        self._program = program
        # "BOOL", "STRING", "DYN", ...: what the checker inferred, for callers that need a bool.
        self.return_type: str = str(program.return_type().name())

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """Evaluate against JSON-like values; pure.

        Returns plain Python values (bool, int, float, str, None, list, dict).
        Raises :class:`CelEvaluationError` for any runtime error, including a variable missing
        from ``activation`` or a value CEL cannot represent.
        """
        try:
            value = self._program.eval(data=activation)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise CelEvaluationError(self.expression, _reword_runtime(str(exc))) from exc
        if value.type() == _cel.Type.ERROR:
            raise CelEvaluationError(self.expression, _reword_runtime(str(value.value())))
        return value.plain_value()

    def __repr__(self) -> str:
        return f"CelProgram({self.expression!r}, variables={self.variables!r})"


def compile_expression(expr: str, *, variables: Iterable[str]) -> CelProgram:
    """Compile (parse and type-check) ``expr`` with the named ``dyn`` variables; cached (LRU).

    Raises :class:`CelError` when the expression does not parse or references something
    undeclared, or an overload that cannot exist (``1 + 'a'``).
    """
    return _compile_cached(expr, tuple(sorted(set(variables))))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compile_cached(expr: str, variables: tuple[str, ...]) -> CelProgram:
    if not expr.strip():
        raise CelError(expr, "ERROR: <input>:1:1: expression is empty")
    try:
        program = _environment(variables).compile(expr)
    except (RuntimeError, ValueError) as exc:
        raise CelError(expr, _clean(str(exc))) from exc
    return CelProgram(expr, variables, program)


_DEVICE_VARIABLES = ("device",)
_ATTRIBUTE_KINDS = ("string", "int", "bool", "version", "strings", "ints", "bools", "versions")


def _attribute_value(name: str, attribute: Mapping[str, Any]) -> Any:
    """The CEL value of one ResourceSlice attribute (``{"int": 0}`` → 0).

    Versions are plain strings here: there is no ``semver()`` type in this environment.
    """
    for kind in _ATTRIBUTE_KINDS:
        if kind in attribute:
            return attribute[kind]
    msg = f"device attribute {name!r} has none of {', '.join(_ATTRIBUTE_KINDS)}"
    raise ValueError(msg)


def _by_domain(driver: str, entries: Mapping[str, Any], convert: Any) -> dict[str, dict[str, Any]]:
    """Group ``domain/name`` (or bare ``name``, the driver's domain) keys into nested maps."""
    grouped: dict[str, dict[str, Any]] = {driver: {}}
    for key, raw in entries.items():
        domain, _, name = key.rpartition("/")
        grouped.setdefault(domain or driver, {})[name] = convert(key, raw)
    return grouped


def _capacity_value(name: str, capacity: Any) -> Any:
    """A capacity as its quantity string (``{"value": "1Gi"}`` → ``"1Gi"``)."""
    if isinstance(capacity, Mapping):
        return capacity.get("value")
    return capacity


def evaluate_device_selector(
    expression: str,
    *,
    driver: str,
    attributes: Mapping[str, Mapping[str, Any]],
    capacity: Mapping[str, Any],
    allow_multiple_allocations: bool | None = None,
) -> bool:
    """Whether a ResourceSlice device (resource.k8s.io/v1) satisfies a CEL device selector.

    The ``device`` variable is built as Kubernetes builds it: ``device.driver``,
    ``device.attributes[<domain>].<name>`` and ``device.capacity[<domain>].<name>``, where an
    unqualified attribute or capacity name belongs to the driver's domain, and
    ``device.allowMultipleAllocations`` when given. Capacities are exposed as quantity strings
    and versions as strings (no ``quantity()``/``semver()`` library here).

    A runtime error (for example a missing attribute: ``no such key``) or a non-bool result means
    the device does not match; the scheduler moves on to the next device. (Kubernetes documents a
    runtime error as aborting the allocation; for a simulation, "no match" keeps one odd device from
    blocking a whole claim, and it is what the project asked for.)

    Pure. Raises :class:`CelError` if the expression does not compile or cannot yield a bool, and
    ``ValueError`` for a malformed attribute.
    """
    program = compile_expression(expression, variables=_DEVICE_VARIABLES)
    if program.return_type not in ("BOOL", "DYN"):
        raise CelError(expression, f"must evaluate to bool, not {program.return_type.lower()}")
    device: dict[str, Any] = {
        "driver": driver,
        "attributes": _by_domain(driver, attributes, _attribute_value),
        "capacity": _by_domain(driver, capacity, _capacity_value),
    }
    if allow_multiple_allocations is not None:
        device["allowMultipleAllocations"] = allow_multiple_allocations
    try:
        result = program.evaluate({"device": device})
    except CelEvaluationError:
        return False
    return result is True
