"""The simulated kubelet: one :class:`.kubelet.Kubelet` per node, running pods as processes
with CDI edits, probes and DRA prepare/unprepare through real plugins."""
