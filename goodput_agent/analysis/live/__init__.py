"""Live detection: pure judgements of a running job (stall, stacks, fail-slow) that `detect/`
feeds with what it observed."""
