"""The demo's progress table: a row per node with its daemon and worker, what is still
missing, and how it is drawn on a terminal and elsewhere."""

from __future__ import annotations

import io
from typing import Any

from computedomain_sim.cli.demo import progress
from computedomain_sim.cli.demo.workload import Workload
from computedomain_sim.cluster.topology import RACK_LABEL

WORK = Workload(workers=2)


def node(name: str, rack: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {RACK_LABEL: rack}}}


def pod(name: str, node: str, phase: str, *, ready: bool = True) -> dict[str, Any]:
    status = "True" if ready else "False"
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": node},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": status}]},
    }


def domain(status: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "demo", "namespace": "demo", "uid": "u"},
        "status": {"status": status, "nodes": entries},
    }


NODES = (node("b", "r1"), node("a", "r0"))


def test_rows_join_nodes_daemons_entries_and_workers() -> None:
    snapshot = progress.Snapshot(
        NODES,
        domain("NotReady", [{"name": "a", "index": 0, "status": "Ready"}]),
        (pod("d-a", "a", "Running"), pod("d-b", "b", "Running", ready=False)),
        (pod("w-a", "a", "Pending"),),
        plugins=(pod("p-a", "a", "Running"), pod("p-b", "b", "Running")),
    )
    assert progress.rows(snapshot) == [
        ["a", "r0", "Running", "Running", "0", "Ready", "Pending"],
        ["b", "r1", "Running", "Running (not ready)", "-", "-", "-"],
    ]
    assert progress.missing(snapshot, WORK) == [
        "ComputeDomain demo/demo Ready (status NotReady, 1/2 daemons Ready)",
        "2 workers Running (0 are)",
    ]


def test_nothing_is_missing_once_ready_with_every_worker_running() -> None:
    entries = [{"name": n, "index": 0, "status": "Ready"} for n in ("a", "b")]
    workers = (pod("w-a", "a", "Running"), pod("w-b", "b", "Running"))
    snapshot = progress.Snapshot(NODES, domain("Ready", entries), (), workers)
    assert progress.missing(snapshot, WORK) == []
    heading = progress.render(snapshot, WORK, 3.0)[0]
    assert heading == "[  3.0s] ComputeDomain demo/demo: Ready  workers running 2/2  controller -"


def test_an_absent_domain_is_named() -> None:
    snapshot = progress.Snapshot(NODES, None, (), ())
    assert progress.missing(snapshot, WORK)[0] == "ComputeDomain demo/demo does not exist"


def test_off_a_terminal_only_changed_lines_are_printed() -> None:
    out = io.StringIO()
    display = progress.Display(out, tty=False)
    display.show(["[1s] x", "H", "a 1", "b 1"])
    display.show(["[2s] x", "H", "a 1", "b 1"])  # only the clock moved
    display.show(["[3s] x", "H", "a 1", "b 2"])
    display.show(["[4s] y", "H", "a 1", "b 2"])  # only the heading changed
    assert out.getvalue().splitlines() == [
        "[1s] x", "H", "a 1", "b 1", "[3s] x", "b 2", "[4s] y",
    ]  # fmt: skip
    assert "\x1b" not in out.getvalue()


def test_on_a_terminal_the_table_is_redrawn_in_place() -> None:
    out = io.StringIO()
    display = progress.Display(out, tty=True)
    display.show(["one", "two"])
    display.show(["three", "four"])
    assert out.getvalue() == (
        "\x1b[2Kone\n\x1b[2Ktwo\n" + "\x1b[1F\x1b[1F" + "\x1b[2Kthree\n\x1b[2Kfour\n"
    )
    display.release()
    display.show(["five"])
    assert out.getvalue().endswith("four\n\x1b[2Kfive\n")
