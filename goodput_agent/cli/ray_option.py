"""`--ray [auto|ADDRESS]` on investigate, trace summary|diff and collect: the per-rank and
per-file work runs as Ray tasks on that cluster (goodput_agent.core.ray_exec); without it nothing
changes."""

from __future__ import annotations

import click

from goodput_agent.core.parallel import Runner

ray_option = click.option(
    "--ray", "ray_address", default=None, is_flag=False, flag_value="auto",
    metavar="auto|ADDRESS",
    help="Run the per-rank and per-file work as Ray tasks on this cluster (auto, or --ray "
         "alone: RAY_ADDRESS or the cluster this host is in). Needs goodput[ray].")


def ray_runner(address: str | None) -> Runner | None:
    """None without an address; BadInput (exit 2, one line) when Ray is missing or down."""
    if not address:
        return None
    from goodput_agent.core.ray_exec import RayRunner

    return RayRunner(address)
