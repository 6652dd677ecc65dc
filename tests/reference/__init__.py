"""Reference implementations Goodput is checked against (run in their own environments)."""
