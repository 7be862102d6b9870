"""Compare the candidate CEL engines for Python on the expressions Kubernetes needs.

Run: ``python bench/cel_engines.py [iterations]`` (prints one JSON document). Engines that are
not installed are listed under ``not_installed``; only ``cel-expr-python`` is a project
dependency. To reproduce the full comparison, install the other two into a scratch venv:
``pip install cel-python==0.5.0 cel-expr-python==0.1.3 common-expression-language==0.10.0``.

Each case is (name, expression, variables, expected) where ``expected`` is the value cel-go (the
engine inside kube-apiserver) gives, or the string ``"error"`` when cel-go reports an evaluation
error. A case passes when the engine gives the same value, or raises/returns an error for
``"error"``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

SPEC = {
    "numNodes": 0,
    "channel": {"resourceClaimTemplate": {"name": "imex-channel-0"}, "allocationMode": "Single"},
}
SPEC_CHANGED = {
    "numNodes": 0,
    "channel": {"resourceClaimTemplate": {"name": "other"}, "allocationMode": "Single"},
}
DEVICE = {
    "driver": "compute-domain.nvidia.com",
    "attributes": {"compute-domain.nvidia.com": {"type": "channel", "id": 0}},
    "capacity": {},
}
ERROR = "error"

CASES: list[tuple[str, str, dict[str, Any], Any]] = [
    ("equal nested objects", "self == oldSelf", {"self": SPEC, "oldSelf": SPEC}, True),
    ("unequal nested objects", "self == oldSelf", {"self": SPEC, "oldSelf": SPEC_CHANGED}, False),
    ("equal lists", "self == oldSelf", {"self": [1, {"a": "b"}], "oldSelf": [1, {"a": "b"}]}, True),
    (
        "dotted map key",
        "device.driver == 'compute-domain.nvidia.com' && "
        "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
        "device.attributes['compute-domain.nvidia.com'].id == 0",
        {"device": DEVICE},
        True,
    ),
    ("json int is int", "type(self.n) == int", {"self": {"n": 3}}, True),
    ("json float is double", "type(self.f) == double", {"self": {"f": 1.5}}, True),
    ("int arithmetic", "self.n / 2 == 1", {"self": {"n": 3}}, True),
    ("int + double is no overload", "self.n + 1.5", {"self": {"n": 3}}, ERROR),
    ("uint literal", "type(1u) == uint", {}, True),
    ("has present", "has(self.x)", {"self": {"x": 1}}, True),
    ("has absent", "has(self.y)", {"self": {"x": 1}}, False),
    ("all", "self.l.all(e, e > 0)", {"self": {"l": [1, 2]}}, True),
    ("exists", "self.l.exists(e, e > 1)", {"self": {"l": [1, 2]}}, True),
    ("exists_one", "self.l.exists_one(e, e > 0)", {"self": {"l": [1, 2]}}, False),
    ("map", "self.l.map(e, e * 2)", {"self": {"l": [1, 2]}}, [2, 4]),
    ("filter", "self.l.filter(e, e > 1)", {"self": {"l": [1, 2]}}, [2]),
    ("map over keys", "self.m.all(k, k.startsWith('a'))", {"self": {"m": {"ab": 1}}}, True),
    (
        "string predicates",
        "self.s.startsWith('ab') && self.s.endsWith('c') && self.s.contains('b')",
        {"self": {"s": "abc"}},
        True,
    ),
    ("size", "size(self.s) == 3 && self.l.size() == 2", {"self": {"s": "abc", "l": [1, 2]}}, True),
    ("unicode size", "size(self.s)", {"self": {"s": "héllo"}}, 5),
    ("matches", "self.s.matches('^[a-z]+$')", {"self": {"s": "abc"}}, True),
    ("matches lookaround rejected", "self.s.matches('(?=a)')", {"self": {"s": "abc"}}, ERROR),
    ("missing key", "self.y == 1", {"self": {"x": 1}}, ERROR),
    ("no such overload", "self.s + 1", {"self": {"s": "abc"}}, ERROR),
    ("index out of range", "self.l[3]", {"self": {"l": [1]}}, ERROR),
    ("int overflow", "9223372036854775807 + 1", {}, ERROR),
    ("division by zero", "1 / 0", {}, ERROR),
    ("in map", "'a' in self.m", {"self": {"m": {"a": 1}}}, True),
    ("ternary", "self.n > 1 ? 'big' : 'small'", {"self": {"n": 3}}, "big"),
]
# Functions of cel-go's strings extension that Kubernetes enables; engines without them need
# the project to register them (cel's ``stdlib`` module does, as Python callbacks).
EXT_CASES: list[tuple[str, str, dict[str, Any], Any]] = [
    ("lowerAscii", "self.s.lowerAscii() == 'abc'", {"self": {"s": "ABC"}}, True),
    ("split", "self.s.split(',') == ['a', 'b']", {"self": {"s": "a,b"}}, True),
    ("join", "['a', 'b'].join('-') == 'a-b'", {}, True),
    ("indexOf", "'abc'.indexOf('c') == 2", {}, True),
]
BENCH = [
    ("self == oldSelf (CD spec)", "self == oldSelf", {"self": SPEC, "oldSelf": SPEC}),
    ("DeviceClass selector", CASES[3][1], {"device": DEVICE}),
]


class _Engine:
    def __init__(self, name: str) -> None:
        self.name = name

    def compile(self, expr: str, names: list[str]) -> Any:
        raise NotImplementedError

    def run(self, program: Any, variables: dict[str, Any]) -> Any:
        raise NotImplementedError


class _RustCel(_Engine):
    def __init__(self, *, stdlib: bool) -> None:
        import cel

        super().__init__("common-expression-language" + (" + cel.stdlib" if stdlib else ""))
        self.cel = cel
        self.stdlib = stdlib

    def compile(self, expr: str, names: list[str]) -> Any:
        return self.cel.compile(expr)

    def run(self, program: Any, variables: dict[str, Any]) -> Any:
        ctx = self.cel.Context(variables)
        if self.stdlib:
            self.cel.stdlib.add_stdlib_to_context(ctx)
        return program.execute(ctx)


class _CelPy(_Engine):
    def __init__(self) -> None:
        import celpy

        super().__init__("cel-python (celpy)")
        self.celpy = celpy
        self.env = celpy.Environment()

    def compile(self, expr: str, names: list[str]) -> Any:
        return self.env.program(self.env.compile(expr))

    def run(self, program: Any, variables: dict[str, Any]) -> Any:
        act = {k: self.celpy.json_to_cel(v) for k, v in variables.items()}
        result = program.evaluate(act)
        if isinstance(result, self.celpy.CELEvalError):
            raise RuntimeError(str(result))
        return self._plain(result)

    def _plain(self, value: Any) -> Any:
        """Unwrap celpy's types (its BoolType is an int subclass) into plain Python values."""
        types = self.celpy.celtypes
        if isinstance(value, types.BoolType):
            return bool(value)
        if isinstance(value, types.IntType | types.UintType):
            return int(value)
        if isinstance(value, types.DoubleType):
            return float(value)
        if isinstance(value, types.StringType):
            return str(value)
        if isinstance(value, types.ListType):
            return [self._plain(v) for v in value]
        if isinstance(value, types.MapType):
            return {self._plain(k): self._plain(v) for k, v in value.items()}
        return value


class _CelExpr(_Engine):
    def __init__(self) -> None:
        from cel_expr_python import cel

        super().__init__("cel-expr-python")
        self.cel = cel
        try:
            from cel_expr_python.ext import ext_strings

            self.ext = [ext_strings.ExtStrings()]
        except Exception:
            self.ext = []

    def compile(self, expr: str, names: list[str]) -> Any:
        env = self.cel.NewEnv(
            variables=dict.fromkeys(names, self.cel.Type.DYN), extensions=self.ext
        )
        return env.compile(expr)

    def run(self, program: Any, variables: dict[str, Any]) -> Any:
        value = program.eval(data=variables)
        if value.type() == self.cel.Type.ERROR:
            raise RuntimeError(str(value.value()))
        return value.plain_value()


def _engines() -> tuple[list[_Engine], dict[str, str]]:
    engines: list[_Engine] = []
    missing: dict[str, str] = {}
    factories: list[tuple[str, Callable[[], _Engine]]] = [
        ("common-expression-language", lambda: _RustCel(stdlib=False)),
        ("common-expression-language + cel.stdlib", lambda: _RustCel(stdlib=True)),
        ("cel-python (celpy)", _CelPy),
        ("cel-expr-python", _CelExpr),
    ]
    for name, factory in factories:
        try:
            engines.append(factory())
        except ImportError as exc:
            missing[name] = str(exc)
    return engines, missing


def _check(engine: _Engine, case: tuple[str, str, dict[str, Any], Any]) -> tuple[bool, str]:
    _, expr, variables, expected = case
    try:
        program = engine.compile(expr, sorted(variables))
        got = engine.run(program, variables)
    except Exception as exc:
        return expected == ERROR, f"error: {type(exc).__name__}: {str(exc)[:80]}"
    ok = expected != ERROR and got == expected and type(got) is type(expected)
    return ok, repr(got)[:80]


def _time_us(engine: _Engine, expr: str, variables: dict[str, Any], n: int) -> float | None:
    """Best of three runs of ``n`` evaluations (the machine is shared; the best is the signal)."""
    try:
        program = engine.compile(expr, sorted(variables))
        engine.run(program, variables)
    except Exception:
        return None
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            engine.run(program, variables)
        best = min(best, (time.perf_counter() - start) / n)
    return round(best * 1e6, 2)


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    engines, missing = _engines()
    report: dict[str, Any] = {"iterations": n, "not_installed": missing, "engines": {}}
    for engine in engines:
        results = {c[0]: _check(engine, c) for c in CASES + EXT_CASES}
        failed = {k: v[1] for k, v in results.items() if not v[0]}
        report["engines"][engine.name] = {
            "core_cases_passed": sum(results[c[0]][0] for c in CASES),
            "core_cases": len(CASES),
            "strings_ext_passed": sum(results[c[0]][0] for c in EXT_CASES),
            "strings_ext_cases": len(EXT_CASES),
            "failed": failed,
            "eval_us": {name: _time_us(engine, e, v, n) for name, e, v in BENCH},
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
