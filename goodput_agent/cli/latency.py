"""`goodput latency`: the latency question, of a bundle or against a live Prometheus."""

from __future__ import annotations

from pathlib import Path

import click

from goodput_agent.cli.main import (
    _investigate,
    _live_latency,
    pictures_option,
    prometheus_options,
)
from goodput_agent.cli.options import json_option, ledger_option, with_options


@click.command("latency")
@click.argument("bundle", type=click.Path(path_type=Path), required=False)
@with_options(prometheus_options)
@click.option("--baseline", default=None, metavar="WINDOW",
              help="Good window: 10:00-11:00 or START/END in ISO 8601.")
@click.option("--incident", default=None, metavar="WINDOW", help="Bad window, same forms.")
@click.option("--since", "since_text", default=None, metavar="WHEN",
              help="Without windows: look back this far for the change (default 6h), or "
                   "search this window (10:00-11:00, START/END).")
@pictures_option
@json_option
@ledger_option
def latency(bundle: Path | None, prometheus_url: str | None, service: str | None,
            tz_name: str | None, timeout_s: float, baseline: str | None, incident: str | None,
            since_text: str | None, pictures_dir: Path | None, as_json: bool,
            ledger_path: Path | None) -> None:
    """Why did inference latency rise? Queue vs prefill vs decode: in a bundle (its windows
    are its incident.yaml's), or against a live Prometheus."""
    if bundle is not None:
        if prometheus_url or baseline or incident or since_text:
            raise click.UsageError("give a bundle or --prometheus URL (with --baseline, "
                                   "--incident, --since), not both")
        _investigate(bundle, ledger_path, "latency", as_json, pictures_dir)
        return
    if not prometheus_url:
        raise click.UsageError("give a bundle (a directory or .tar.gz) or --prometheus URL")
    _live_latency(prometheus_url, service, baseline, incident,
                  since_text or (None if baseline or incident else "6h"), tz_name, timeout_s,
                  ledger_path, as_json, pictures_dir)
