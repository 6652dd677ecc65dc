"""`goodput policy check | init`: the approval policy every surface of a ledger judges by."""

from __future__ import annotations

from pathlib import Path

import click

from goodput_agent.cli.actions import _echo_json
from goodput_agent.cli.options import json_option, ledger_option
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import line


@click.group("policy")
def policy_group() -> None:
    """Approval policies."""


@policy_group.command("check")
@click.argument("file", type=click.Path(path_type=Path), required=False)
@json_option
@ledger_option
def policy_check(file: Path | None, as_json: bool, ledger_path: Path | None) -> None:
    """Validate a policy file (default: the one the ledger's commands and pages use:
    $GOODPUT_POLICY, else policy.yaml beside the ledger, else the shipped one); errors name
    the file and line."""
    from goodput_agent.approval.policy import load_policy, policy_path_for
    from goodput_agent.ledger import default_ledger_path

    p = load_policy(policy_path_for(file, ledger_path or default_ledger_path()))
    enabled = {n: t.approvers for n, t in p.tools.items() if t.enabled}
    if as_json:
        _echo_json({"ok": True, "file": p.source, "enabled": enabled,
                    "policy": p.model_dump(mode="json")})
        return
    click.echo(f"{line(p.source)}: ok; approvals expire after "
               f"{p.approval.expires_after.total_seconds() / 60:g} min; "
               f"{len(enabled)} of {len(p.tools)} listed tools enabled"
               + "".join(f"\n  {n}: approvers {', '.join(a) or 'none'}"
                         for n, a in enabled.items()))


@policy_group.command("init")
@click.option("--approver", "approvers", multiple=True, required=True, metavar="NAME",
              help="A person who may approve (repeat for more; group:NAME for a group).")
@click.option("--tool", "tools", multiple=True, metavar="TOOL",
              help="A mutating tool to enable (repeat; default: those the ledger's "
                   "investigations proposed).")
@click.option("--path", "paths", multiple=True, metavar="GLOB",
              help="A file config_change may write (repeat; default: those the ledger's "
                   "proposals edit).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Where to write it (default: policy.yaml beside the ledger, which every "
                   "command and page of that ledger then uses).")
@click.option("--force", is_flag=True, help="Replace an existing file.")
@json_option
@ledger_option
def policy_init(approvers: tuple[str, ...], tools: tuple[str, ...], paths: tuple[str, ...],
                output: Path | None, force: bool, as_json: bool,
                ledger_path: Path | None) -> None:
    """Write a starting policy: the tools a site uses, enabled for the named approvers."""
    from goodput_agent.approval.policy import site_policy_path
    from goodput_agent.approval.policy_init import paths_from, starting_policy, tools_from
    from goodput_agent.ledger import default_ledger_path, open_ledger
    from goodput_agent.ledger.actions import recent

    ledger = ledger_path or default_ledger_path()
    target = output or site_policy_path(ledger)
    if target.exists() and not force:
        raise BadInput(f"{target}: exists already (--force replaces it; `goodput policy "
                       "check` shows what it allows)")
    proposed = []
    if ledger.is_file() and not (tools and (paths or "config_change" not in tools)):
        with open_ledger(ledger, read_only=True) as lg:
            proposed = recent(lg)
    chosen = list(tools) or tools_from(proposed)
    text, policy = starting_policy(list(approvers), chosen, list(paths) or paths_from(proposed),
                                   str(target))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{target}: cannot write the policy: {exc.strerror}") from None
    enabled = {n: t.approvers for n, t in policy.tools.items()}
    if as_json:
        _echo_json({"file": str(target), "enabled": enabled,
                    "policy": policy.model_dump(mode="json")})
        return
    click.echo(line(f"{target}: written; {len(enabled)} tools enabled for "
                    f"{', '.join(approvers)}: {', '.join(enabled)}"))
