"""API models, names, feature gates and errors shared by every component. No I/O.

Plugins may import from here: the models and errors are part of the public surface.
"""
