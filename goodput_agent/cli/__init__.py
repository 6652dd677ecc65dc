"""The `goodput` command line: one module per command group, the terminal rendering beside them.
`main` builds the group; the entry point is `goodput_agent.cli:main`."""

from goodput_agent.cli.main import cli, main

__all__ = ["cli", "main"]
