"""The simulated kube-scheduler: pure placement and allocation rules, and the loop that binds
pods (:mod:`.scheduler`)."""
