"""The CLI imports a command's module only when that command runs; --help still lists all."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.cli.lazy import LAZY_COMMANDS


def test_help_lists_every_lazy_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = {ln.split()[0] for ln in result.output.split("Commands:")[1].splitlines()
              if ln.strip()}
    assert set(LAZY_COMMANDS) <= listed
    assert {"investigate", "eval", "ledger"} <= listed


def test_each_lazy_command_resolves_to_its_name() -> None:
    import click

    ctx = click.Context(cli)
    for name in LAZY_COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name


def test_importing_the_cli_leaves_other_commands_unloaded() -> None:
    code = ("import sys, goodput_agent.cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('goodput_agent.accounting', "
            "'goodput_agent.watch', 'goodput_agent.web', 'goodput_agent.cli.actions'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
