"""A click group whose commands from other modules are imported only when one is run.

`goodput investigate` should not pay for importing the web server, watch, accounting or the
actions' tables it never uses; `goodput --help` still lists every command (it imports them).
"""

from __future__ import annotations

import importlib

import click

from goodput_agent.cli.term import add_output_options

# command name -> "module:attribute" of its click command, all under goodput_agent.cli
LAZY_COMMANDS = {
    "trace": "trace:trace",
    "latency": "latency:latency",
    "completion": "completion:completion_cmd",
    "collect": "live:collect_cmd",
    "chat": "chat:chat",
    "serve": "serve:serve_cmd",
    "failure-timeline": "serve:failure_timeline_cmd",
    "node-health": "node:node_health",
    "fleet": "fleet:fleet_cmd",
    "account": "account:account_cmd",
    "watch": "watch:watch",
    "check": "check:check_cmd",
    "actions": "actions:actions_cmd",
    "approve": "actions:approve_cmd",
    "reject": "actions:reject_cmd",
    "verify": "verify:verify_cmd",
    "policy": "policy:policy_group",
    "propose": "actions:propose_cmd",
    "token": "tokens:token_group",
    "ledger": "ledger:ledger",
    "eval": "eval:eval_cmd",
}


class LazyGroup(click.Group):
    """Commands defined in this group's module are eager; those in LAZY_COMMANDS load on use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in LAZY_COMMANDS:
            module_name, attribute = LAZY_COMMANDS[cmd_name].split(":")
            module = importlib.import_module(f"goodput_agent.cli.{module_name}")
            command = getattr(module, attribute)
            self.add_command(command, cmd_name)
        # every command's --wide, --no-color, -o and exit codes, the same everywhere
        return None if command is None else add_output_options(command, cmd_name)
