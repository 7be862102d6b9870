"""``computedomain doctor``: why a ComputeDomain is not Ready, in plain words.

Read-only diagnosis over the Kubernetes API, in three layers:

- :mod:`.gathering` lists the objects that matter (domains, cliques, daemon DaemonSets and
  pods, workload pods and claims, ResourceSlices, nodes, kubelet plugin pods, events) into a
  :class:`~.snapshot.Snapshot`; the only part that does I/O;
- :mod:`.diagnosis` is the pure ``diagnose(snapshot) -> list[Finding]``, built from the
  checks in :mod:`.workloads` (claims, nodes, plugin) and :mod:`.daemons` (daemon pods,
  index space, host IMEX conflicts, probes);
- :mod:`.report` turns the findings into per-domain reports, as text or JSON.

:mod:`.command` registers the sub-command with the dispatcher and maps outcomes to exit codes.
"""
