"""The fault spec: the documented examples parse, every mistake is named, rendering round-trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain_sim.faults import spec
from tests.faults import settings as suite


def test_the_documented_examples() -> None:
    one = spec.parse("409=0.05,429=0.02,latency=5ms..50ms,watch-drop=0.01,seed=42")
    assert one.seed == 42
    (rule,) = one.rules
    assert rule.errors == (("409", 0.05), ("429", 0.02))
    assert rule.latency == (0.005, 0.05)
    assert rule.watch_drop == 0.01
    two = spec.parse(
        "seed=7;409=0.2,verbs=update|patch,resources=nodes;500=1%,users=system:serviceaccount:*"
    )
    assert two.seed == 7
    assert [r.scope.resources for r in two.rules] == [("nodes",), ()]
    assert two.rules[1].rate("500") == 0.01
    assert two.rules[1].scope.users == ("system:serviceaccount:*",)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("409=2", "409: '2' is not between 0 and 1"),
        ("429=x", "429: 'x' is not a probability"),
        ("latency=5ms..1ms", "ends before it starts"),
        ("latency=fast", "is not a duration"),
        ("latency=inf", "is not between 0 and 600s"),
        ("bogus=1", "unknown key 'bogus'"),
        ("409", "'409' is not key=value"),
        ("verbs=get|", "empty item"),
        ("verbs=fetch", "unknown verb 'fetch'"),
        ("resources=Nodes", "is not a resource plural"),
        ("seed=1;seed=2", "rule 2: seed: the seed is given once per spec"),
        ("seed=one", "'one' is not an integer"),
        ("409=0.6,500=0.6", "add up to 1.2, more than 1"),
        ("watch-drop=0.7,watch-expire=0.7", "add up to more than 1"),
        ("409=0.1,409=0.2", "409: given twice"),
        ("500=0.1;conflict=0.1,timeout=2", "rule 2: 504:"),
    ],
)
def test_mistakes_are_named(text: str, words: str) -> None:
    with pytest.raises(spec.SpecError) as caught:
        spec.parse(text)
    assert words in str(caught.value)


@pytest.mark.parametrize("text", ["", "off", "OFF", " none "])
def test_off(text: str) -> None:
    assert spec.parse(text) == spec.FaultSpec()
    assert spec.render(spec.FaultSpec()) == "off"


def test_verb_groups_and_aliases() -> None:
    (rule,) = spec.parse("conflict=0.1,throttle=0.2,verbs=reads|create").rules
    assert rule.errors == (("409", 0.1), ("429", 0.2))
    assert rule.scope.verbs == ("get", "list", "watch", "create")


probabilities = st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25, 1 / 3, 0.5])
durations = st.sampled_from([0.0, 0.001, 0.005, 0.05, 0.25, 1.0, 2.5, 60.0])
spans = st.tuples(durations, durations).map(lambda t: (min(t), max(t)))
names = st.lists(
    st.sampled_from(["nodes", "pods/status", "computedomaincliques", "leases"]),
    min_size=1,
    max_size=3,
    unique=True,
).map(tuple)
scopes = st.builds(
    spec.Scope,
    verbs=st.sampled_from([(), ("update",), ("get", "list", "watch")]),
    resources=st.just(()) | names,
    namespaces=st.sampled_from([(), ("default",), ("a", "b")]),
    users=st.sampled_from([(), ("system:serviceaccount:*",)]),
    agents=st.sampled_from([(), ("compute-domain-kubelet-plugin*",)]),
)


@st.composite
def rules(draw: st.DrawFn) -> spec.Rule:
    kinds = draw(st.lists(st.sampled_from(spec.ERRORS), unique=True, max_size=3))
    errors = tuple((k, draw(st.sampled_from([0.01, 0.1, 0.2]))) for k in spec.ERRORS if k in kinds)
    drop = draw(probabilities)
    return spec.Rule(
        errors=errors,
        latency=draw(st.none() | spans),
        latency_rate=draw(probabilities),
        watch_drop=drop,
        watch_expire=draw(probabilities.filter(lambda p: p + drop <= 1)),
        watch_after=draw(spans),
        retry_after=draw(durations),
        scope=draw(scopes),
    )


@settings(max_examples=suite.examples(60, 500), deadline=None)
@given(st.builds(spec.FaultSpec, rules=st.lists(rules(), max_size=3).map(tuple), seed=st.none()))
def test_render_round_trips(fault_spec: spec.FaultSpec) -> None:
    keep = tuple(r for r in fault_spec.rules if not r.idle or r.scope != spec.Scope())
    expected = spec.FaultSpec(rules=keep, seed=fault_spec.seed)
    assert spec.parse(spec.render(fault_spec)) == expected
    seeded = expected.with_seed(123)
    assert spec.parse(spec.render(seeded)) == seeded
