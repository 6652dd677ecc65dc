"""Hand-built review scenarios (see each module)."""
