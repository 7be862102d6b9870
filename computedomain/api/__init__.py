"""API models, names, feature gates and errors shared by every component. No I/O."""
