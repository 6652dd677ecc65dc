"""Options every command group shares, declared once: the ledger, --json, and applying a list
of options as one decorator."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

ledger_option = click.option("--ledger", "ledger_path", type=click.Path(path_type=Path),
                             default=None,
                             help="DuckDB ledger file (default: $GOODPUT_LEDGER, else "
                                  "~/.local/share/goodput/ledger.duckdb).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def with_options(options: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    """Apply click options in the order they are listed (the first is the first in --help)."""
    def wrap(f: Any) -> Any:  # noqa: ANN401 - a click command function
        for opt in reversed(options):
            f = opt(f)
        return f
    return wrap
