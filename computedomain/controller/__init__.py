"""cd-controller: renders per-domain objects, reconciles, aggregates status, tears down in order."""
