"""``computedomain demo``: a ComputeDomain with workers across two simulated racks, end to end."""
