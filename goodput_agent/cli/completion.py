"""`goodput completion SHELL`: the shell's completion script for goodput (click's own), to be
sourced from the shell's startup file."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion_cmd(shell: str) -> None:
    """Print the completion script for SHELL: commands, options and their choices.

    \b
    bash:  eval "$(goodput completion bash)"     (in ~/.bashrc)
    zsh:   eval "$(goodput completion zsh)"      (in ~/.zshrc)
    fish:  goodput completion fish > ~/.config/fish/completions/goodput.fish
    """
    from click.shell_completion import get_completion_class

    from goodput_agent.cli.main import cli

    cls = get_completion_class(shell)
    assert cls is not None  # every SHELLS entry is one click ships
    click.echo(cls(cli, {}, "goodput", "_GOODPUT_COMPLETE").source())
