"""Node faults: a reboot, a node that stops reporting Ready (:class:`~.schedule.Fault`\\ s).

What a reboot or an outage does to a node is the simulation's business (its kubelet kills
every process, takes a new boot ID, wipes the CDI directory, forgets the plugins and restarts
the pods: ``computedomain_sim.kubelet.kubelet.Kubelet.reboot``); these faults only decide when
and to which node, through plain callables, so they need no import of the simulation and tests
can drive a node of their own the same way::

    Reboot(lambda: {name: k.reboot for name, k in cluster.kubelets.items()})
    NotReady(lambda: {name: k.set_ready for name, k in cluster.kubelets.items()})
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from computedomain_sim.faults.schedule import Injected

RebootTable = Callable[[], Mapping[str, Callable[[], Awaitable[None]]]]
ReadyTable = Callable[[], Mapping[str, Callable[[bool], Awaitable[None]]]]


class Reboot:
    """Reboot one node now (instantaneous: no undo)."""

    def __init__(self, nodes: RebootTable) -> None:
        self._nodes = nodes

    @property
    def kind(self) -> str:
        return "reboot"

    def targets(self) -> Sequence[str]:
        return sorted(self._nodes())

    async def inject(self, target: str) -> Injected | None:
        reboot = self._nodes().get(target)
        if reboot is None:
            return None
        await reboot()
        return Injected("rebooted")


class NotReady:
    """One node stops reporting Ready while the fault lasts; the undo makes it Ready again."""

    def __init__(self, nodes: ReadyTable) -> None:
        self._nodes = nodes

    @property
    def kind(self) -> str:
        return "not-ready"

    def targets(self) -> Sequence[str]:
        return sorted(self._nodes())

    async def inject(self, target: str) -> Injected | None:
        set_ready = self._nodes().get(target)
        if set_ready is None:
            return None
        await set_ready(False)

        async def undo() -> None:
            current = self._nodes().get(target)
            if current is not None:
                await current(True)

        return Injected("NotReady", undo)
