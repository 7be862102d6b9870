"""Extension points (pluggy hook specs) and the built-in policies that reproduce upstream."""
