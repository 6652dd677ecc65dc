"""`goodput actions | approve | reject | verify | policy check`: the human decides, the gate
acts within policy, and the re-measurement says whether the fix worked."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from goodput_agent.cli.options import json_option, ledger_option, with_options
from goodput_agent.cli.render import TerminalConsole
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import json_dumps, line, markup

policy_option = click.option(
    "--policy", "policy_path", type=click.Path(path_type=Path), default=None,
    help="Approval policy YAML (default: $GOODPUT_POLICY, else policy.yaml beside the ledger, "
         "else the shipped conservative one).")
EXIT_REFUSED = 2  # the gate or the policy said no (a ledger row says why)
EXIT_FAILED = 1  # the approved command ran and failed (its output is in the ledger)


def _policy(path: Path | None, ledger: Path | None = None):  # noqa: ANN202 - a Policy
    """--policy, else $GOODPUT_POLICY, else the policy beside the ledger, else the shipped
    one: the same one the ledger's pages use."""
    from goodput_agent.approval.policy import load_policy, policy_path_for
    from goodput_agent.ledger import default_ledger_path

    return load_policy(policy_path_for(path, ledger or default_ledger_path()))


def _ledger_path(path: Path | None) -> Path:
    from goodput_agent.ledger import default_ledger_path

    found = path or default_ledger_path()
    if not found.is_file():
        raise BadInput(f"{found}: no ledger here yet (run `goodput investigate` first)")
    return found


def _echo_json(data: Any) -> None:
    click.echo(json_dumps(data))


cluster_options = [
    click.option("--slurm-conf", type=click.Path(path_type=Path), default=None,
                 help="slurm.conf of the cluster to act on (default: $SLURM_CONF)."),
    click.option("--kubeconfig", type=click.Path(path_type=Path), default=None,
                 help="kubeconfig of the cluster to act on (default: $KUBECONFIG)."),
]




@click.command("actions")
@click.argument("investigation_id", required=False)
@click.option("--pending", is_flag=True,
              help="What waits for a decision across investigations, oldest first: who may "
                   "approve each, approvals needed and given, expiry, the evidence digest.")
@policy_option
@json_option
@ledger_option
def actions_cmd(investigation_id: str | None, pending: bool, policy_path: Path | None,
                as_json: bool, ledger_path: Path | None) -> None:
    """Proposed actions of an investigation (default: the latest), or with --pending the queue
    of every investigation's: their status, the claim they rest on, and the policy's decision
    for you (what a refusal needs: the policy lines to add). Decided actions show what ran."""
    from goodput_agent.approval.decision import view_action
    from goodput_agent.approval.queue import pending as queue_of
    from goodput_agent.cli.action_views import action_block, render_queue, render_run
    from goodput_agent.ledger import open_ledger
    from goodput_agent.ledger.actions import actions_of

    if pending and investigation_id:
        raise BadInput("--pending lists every investigation's: give no INVESTIGATION_ID")
    path = _ledger_path(ledger_path)
    policy = _policy(policy_path, path)
    who = _viewer()
    with open_ledger(path, read_only=True, one_turn=True) as lg:
        if pending:
            q = queue_of(lg, policy, who)
        else:
            inv = investigation_id or lg.latest_investigation_id()
            if inv is None or not lg.has_investigation(inv):
                raise BadInput(f"{lg.path}: no investigation "
                               f"{investigation_id or '(empty ledger)'}")
            views = [view_action(lg, a.id, policy, who) for a in actions_of(lg, inv)]
    console = TerminalConsole()
    if pending:
        if as_json:
            _echo_json(q.model_dump(mode="json"))
        else:
            render_queue(q, console)
        return
    if as_json:
        _echo_json({"investigation_id": inv, "policy": policy.source,
                    "actions": [v.model_dump(mode="json") for v in views]})
        return
    console.print(f"[bold]Actions of {markup(inv)}[/] (policy {markup(policy.source)})")
    for v in views:
        console.print(action_block(v))
        if v.ran is not None:
            render_run(v.ran, console, title=f"What ran (action {v.action_id})")


def _viewer() -> Any:
    """The person asking (the login user), for whom the decisions are made; None when the
    account has no name (the decisions then hold for anyone the policy lists)."""
    from goodput_agent.approval.identity import NotAuthenticated, login_identity

    try:
        return login_identity()
    except NotAuthenticated:
        return None


def _authenticated(lg: Any, action_id: int, as_name: str | None, policy: Any) -> Any:
    """The login user (or whom the policy lets them act for); a refusal row and exit 2 when
    --as names someone else."""
    from goodput_agent.approval import store
    from goodput_agent.approval.gate import record_refusal
    from goodput_agent.approval.gate_checks import now_or_utc
    from goodput_agent.approval.identity import NotAuthenticated, cli_identity, login_identity

    try:
        return cli_identity(as_name, policy.approval.delegates)
    except NotAuthenticated as exc:
        try:
            actor: str | None = login_identity().person
        except NotAuthenticated:
            actor = None
        record_refusal(lg, store.action_row(lg, action_id), actor, [str(exc)], now_or_utc(None),
                       stage="authenticate", asked_as=as_name)
        click.echo(f"goodput: refused: {line(exc)}", err=True)
        sys.exit(EXIT_REFUSED)


@click.command("approve")
@click.argument("action_id", type=int)
@click.option("--as", "approver", default=None, metavar="NAME",
              help="Approve on NAME's behalf: only where the policy lets your login user "
                   "(approval.delegates). Default: you, the login user.")
@click.option("--yes", is_flag=True, help="Do not ask to confirm (the preview is still shown).")
@with_options(cluster_options)
@policy_option
@json_option
@ledger_option
def approve_cmd(action_id: int, approver: str | None, yes: bool, slurm_conf: Path | None,
                kubeconfig: Path | None, policy_path: Path | None, as_json: bool,
                ledger_path: Path | None) -> None:
    """Show the exact preview of an action, ask to confirm, approve it as you (the login user)
    and execute it through the gate once the approvals the policy asks for stand. Refused
    (exit 2, with a ledger row) whenever the policy, the approval or your identity says no."""
    from goodput_agent.approval import store
    from goodput_agent.approval.approve_then_execute import approve_and_execute, live_context
    from goodput_agent.approval.decision import run_record, view_action
    from goodput_agent.approval.gate import GateRefused
    from goodput_agent.cli.action_views import render_preview, render_run
    from goodput_agent.ledger import open_ledger

    path = _ledger_path(ledger_path)
    policy = _policy(policy_path, path)
    console = TerminalConsole(stderr=as_json)
    with open_ledger(path, one_turn=True) as lg:
        who = _authenticated(lg, action_id, approver, policy)
        ctx = live_context(store.action_row(lg, action_id).tool, slurm_conf, kubeconfig)
        p = view_action(lg, action_id, policy, who, ctx)
        if p.ran is not None:
            render_run(p.ran, console, title=f"Action {action_id} is {p.status}")
        else:
            render_preview(p, console)
        result: dict[str, Any] = {"preview": p.model_dump(mode="json"),
                                  "approver": who.model_dump()}
        if p.allowed and p.status != "executing" and not yes and not click.confirm(
                f"Approve and run this as {who.shown()}?", default=False, err=True):
            raise BadInput("not confirmed: nothing approved, nothing ran")
        try:
            decision = approve_and_execute(lg, action_id, who, policy, ctx)
        except GateRefused as exc:
            result["refused"] = exc.reason
            if as_json:
                _echo_json(result)
            click.echo(f"goodput: refused: {line(exc.reason)}", err=True)
            sys.exit(EXIT_REFUSED)
        ran = run_record(store.events(lg, action_id)) if decision.execution else None
    result.update(decision.model_dump(mode="json"))
    if as_json:
        _echo_json(result)
    elif ran is not None:
        render_run(ran, console)
    elif decision.waiting:
        console.print(markup(decision.waiting))
    if decision.refused:
        click.echo(f"goodput: approved, but refused: {line(decision.refused)}", err=True)
        sys.exit(EXIT_REFUSED)
    if decision.execution is not None and not decision.execution.ok:
        sys.exit(EXIT_FAILED)


@click.command("reject")
@click.argument("action_id", type=int)
@click.option("--as", "approver", default=None, metavar="NAME",
              help="Reject on NAME's behalf (approval.delegates). Default: you, the login user.")
@click.option("--why", required=True, help="The reason, kept in the ledger.")
@policy_option
@json_option
@ledger_option
def reject_cmd(action_id: int, approver: str | None, why: str, policy_path: Path | None,
               as_json: bool, ledger_path: Path | None) -> None:
    """Reject a proposed action as you (the login user), with the reason (a ledger row)."""
    from goodput_agent.approval.gate import reject_action
    from goodput_agent.ledger import open_ledger

    path = _ledger_path(ledger_path)
    with open_ledger(path, one_turn=True) as lg:
        who = _authenticated(lg, action_id, approver, _policy(policy_path, path))
        row = reject_action(lg, action_id, who, why)
    if as_json:
        _echo_json(row.model_dump(mode="json"))
    else:
        click.echo(line(f"action {action_id} rejected by {who.shown()}: {why} (row {row.id})"))


@click.command("propose")
@click.argument("investigation_id")
@click.argument("tool")
@click.option("--args", "args_json", required=True, metavar="JSON",
              help='The exact arguments, e.g. \'{"path": "job.sbatch", "edits": [...]}\'.')
@click.option("--why", required=True, help="The rationale, kept in the ledger.")
@click.option("--as", "author", default=None, metavar="NAME",
              help="Propose on NAME's behalf (approval.delegates). Default: you, the login user.")
@click.option("--claim", "claim_ids", type=int, multiple=True,
              help="Claim(s) it rests on (default: the investigation's verdict claim).")
@json_option
@ledger_option
def propose_cmd(investigation_id: str, tool: str, args_json: str, why: str,
                author: str | None, claim_ids: tuple[int, ...], as_json: bool,
                ledger_path: Path | None) -> None:
    """Record an exact proposal a person completes (where the remedy could only say a config
    change in words — its `missing` argument says why — this names the file and the edits).
    It still needs an approval to run."""
    from goodput_agent.approval.decision import view_action
    from goodput_agent.approval.identity import cli_identity
    from goodput_agent.ledger import open_ledger
    from goodput_agent.toolkit import MutatingTool, registry

    policy = _policy(None, ledger_path)
    who = cli_identity(author, policy.approval.delegates)
    t = registry().get(tool)
    if not isinstance(t, MutatingTool):
        raise BadInput(f"{tool}: not a mutating tool; known: "
                       f"{', '.join(sorted(n for n, x in registry().items() if not x.read_only))}")
    try:
        args = json.loads(args_json)
        t.input_model.model_validate(args)
    except ValueError as exc:  # JSON and pydantic errors alike
        raise BadInput(f"--args: not valid arguments for {tool}: "
                       f"{str(exc).splitlines()[0][:300]}") from None
    from goodput_agent.ledger.records import claim_ids_of

    with open_ledger(_ledger_path(ledger_path), one_turn=True) as lg:
        known = claim_ids_of(lg, investigation_id)
        claims = list(claim_ids) or known[:1]
        if not claims or not set(claims) <= set(known):
            raise BadInput(f"{lg.path}: investigation {investigation_id} has no claim "
                           f"{sorted(set(claims) - set(known)) or ''}".rstrip())
        aid = lg.record_action(investigation_id, tool, args, True,
                               f"proposed by {who.shown()}: {why.strip()}", claims)
        view = view_action(lg, aid, policy, None, with_preview=False)
    if as_json:
        _echo_json({"action_id": aid, "tool": tool, "args": args, "claims": claims,
                    "policy": view.policy, "allowed": view.allowed, "reasons": view.reasons,
                    "approvers": view.approvers,
                    "fix": view.fix.model_dump(mode="json") if view.fix else None})
        return
    click.echo(line(f"action {aid} proposed: {tool} {json.dumps(args)}"))
    _say_decision(view, aid)


def _say_decision(view: Any, aid: int) -> None:
    """Whether the policy lets anyone approve it, at once: who may, or what to add."""
    if view.allowed:
        who = ", ".join(view.approvers) or "nobody (the policy names no approver)"
        click.echo(line(f"policy {view.policy}: allowed; {who} may "
                        f"approve it (goodput approve {aid}, or its page /actions/{aid})"))
        return
    click.echo(line(f"policy {view.policy}: denied: {'; '.join(view.reasons)}"))
    if view.fix is not None and view.fix.init:
        click.echo(line(f"no policy of this site's yet: {view.fix.init} writes one"))
    if view.fix is not None:
        click.echo(f"to allow it, add to {line(view.fix.policy)}:")
        click.echo("\n".join(line(x) for x in view.fix.lines.rstrip().splitlines()))
        for r in view.fix.remaining:
            click.echo(line(f"no policy line changes this: {r}"))
