"""`goodput actions | approve | reject | verify | policy check`: the human decides, the gate
acts within policy, and the re-measurement says whether the fix worked."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from goodput_agent.cli.options import json_option, ledger_option, with_options
from goodput_agent.cli.render import TerminalConsole
from goodput_agent.errors import BadInput
from goodput_agent.untrusted import json_dumps, line, markup, visible

policy_option = click.option(
    "--policy", "policy_path", type=click.Path(path_type=Path), default=None,
    help="Approval policy YAML (default: $GOODPUT_POLICY, else the shipped conservative one).")
EXIT_REFUSED = 2  # the gate or the policy said no (a ledger row says why)
EXIT_FAILED = 1  # the approved command ran and failed (its output is in the ledger)


def _policy(path: Path | None):  # noqa: ANN202 - a Policy
    from goodput_agent.approval.policy import load_policy

    env = os.environ.get("GOODPUT_POLICY")
    return load_policy(path or (Path(env) if env else None))


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
@policy_option
@json_option
@ledger_option
def actions_cmd(investigation_id: str | None, policy_path: Path | None, as_json: bool,
                ledger_path: Path | None) -> None:
    """Proposed actions of an investigation (default: the latest), with their status, the
    claim they rest on, and whether the policy would allow them."""
    from goodput_agent.approval.gate import preview_action
    from goodput_agent.ledger import open_ledger
    from goodput_agent.ledger.actions import actions_of

    policy = _policy(policy_path)
    with open_ledger(_ledger_path(ledger_path), read_only=True) as lg:
        inv = investigation_id or lg.latest_investigation_id()
        if inv is None or not lg.has_investigation(inv):
            raise BadInput(f"{lg.path}: no investigation {investigation_id or '(empty ledger)'}")
        previews = [preview_action(lg, a.id, policy, None) for a in actions_of(lg, inv)]
    if as_json:
        _echo_json({"investigation_id": inv, "actions": [p.model_dump(mode="json")
                                                        for p in previews]})
        return
    console = TerminalConsole()
    console.print(f"[bold]Actions of {markup(inv)}[/] (policy {markup(policy.source)})")
    for p in previews:
        console.print(_action_block(p))


def _action_block(p: Any) -> Table:
    """One action as label/value rows: readable at any terminal width, unlike one wide row."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="dim", no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row(f"#{p.action_id}", f"[bold]{markup(p.tool)}[/]  {markup(p.status)}")
    t.add_row("args", markup(" ".join(f"{k}={json.dumps(v)}" for k, v in p.args.items())))
    if p.rationale:
        t.add_row("why", markup(p.rationale))
    t.add_row("claims", markup(", ".join(f"#{c.id} {c.category} ({c.confidence:.2f})"
                                         for c in p.claims) or "none"))
    t.add_row("policy", "[green]allowed[/]" if p.allowed else
              "[red]denied[/]: " + markup("; ".join(p.reasons)))
    t.add_row("", "")
    return t


def render_preview(p: Any, console: Console) -> None:
    lines = [f"[bold]{markup(p.tool)}[/]  action {p.action_id} of "
             f"{markup(p.investigation_id)}  status {markup(p.status)}",
             f"args hash {markup(p.args_hash)}", f"evidence {markup(p.evidence_digest)}"]
    for c in p.claims:
        lines.append(markup(f"claim #{c.id} ({c.category}, {c.status}, confidence "
                            f"{c.confidence:.2f}{', node ' + c.node if c.node else ''}): "
                            f"{c.statement}"))
        lines.append(f"  evidence digests: {markup(', '.join(c.evidence_digests)) or 'none'}")
    if p.rationale:
        lines.append(f"why: {markup(p.rationale)}")
    console.print(Panel("\n".join(lines), title="Proposed action"))
    console.print(Panel(markup(p.command or "(no command: see the reasons)"),
                        title="Exactly what runs"))
    if p.dry_run:
        console.print(Panel(Syntax(visible(p.dry_run), "diff", word_wrap=True),
                            title="Dry run / diff"))
    for n in p.notes:
        console.print(f"note: {markup(n)}")
    if p.allowed:
        console.print(f"[green]policy {markup(p.policy)}: allowed[/] (approval expires after "
                      f"{p.expires_after_s / 60:g} min, single use)")
    else:
        for r in p.reasons:
            console.print(f"[red]policy: {markup(r)}[/]")


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
    from goodput_agent.approval.decide import approve_and_execute, live_context
    from goodput_agent.approval.gate import GateRefused, preview_action
    from goodput_agent.ledger import open_ledger

    policy = _policy(policy_path)
    console = TerminalConsole(stderr=as_json)
    with open_ledger(_ledger_path(ledger_path)) as lg:
        who = _authenticated(lg, action_id, approver, policy)
        ctx = live_context(store.action_row(lg, action_id).tool, slurm_conf, kubeconfig)
        p = preview_action(lg, action_id, policy, ctx, who)
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
    result.update(decision.model_dump(mode="json"))
    if as_json:
        _echo_json(result)
    elif decision.execution is not None:
        _render_execution(decision.execution, console)
    elif decision.waiting:
        console.print(markup(decision.waiting))
    if decision.refused:
        click.echo(f"goodput: approved, but refused: {line(decision.refused)}", err=True)
        sys.exit(EXIT_REFUSED)
    if decision.execution is not None and not decision.execution.ok:
        sys.exit(EXIT_FAILED)


def _render_execution(e: Any, console: Console) -> None:
    out = (e.detail or {}).get("output") or {}
    style = "green" if e.ok else "red"
    body = [f"[{style}]{'executed' if e.ok else 'FAILED'}[/] (row {e.id}, approval "
            f"{e.approval_id})"]
    if e.reason:
        body.append(markup(e.reason))
    for r in out.get("results") or []:
        body.append(f"$ {markup(' '.join(r['argv']))}  -> rc {markup(r['rc'])}")
        body += [markup(x) for x in (r["stdout"].strip(), r["stderr"].strip()) if x]
    if out.get("response") is not None:
        body.append(markup(json.dumps(out["response"], default=str)[:1500]))
    console.print(Panel("\n".join(body), title="Execution"))


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

    with open_ledger(_ledger_path(ledger_path)) as lg:
        who = _authenticated(lg, action_id, approver, _policy(policy_path))
        row = reject_action(lg, action_id, who, why)
    if as_json:
        _echo_json(row.model_dump(mode="json"))
    else:
        click.echo(line(f"action {action_id} rejected by {who.shown()}: {why} (row {row.id})"))


@click.group("policy")
def policy_group() -> None:
    """Approval policies."""


@policy_group.command("check")
@click.argument("file", type=click.Path(path_type=Path), required=False)
@json_option
def policy_check(file: Path | None, as_json: bool) -> None:
    """Validate a policy file (default: the shipped one); errors name the file and line."""
    from goodput_agent.approval.policy import load_policy

    p = load_policy(file)
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


@click.command("verify")
@click.argument("investigation_id")
@click.option("--after", "after", type=click.Path(path_type=Path), default=None,
              help="Bundle collected after the fix (same layout as the investigated one).")
@click.option("--slurm-job", "slurm_job", default=None, metavar="JOB",
              help="Failure: collect the job (and sinfo -R) from Slurm now as the after bundle.")
@click.option("--slurm-conf", type=click.Path(path_type=Path), default=None,
              help="With --slurm-job: slurm.conf of the cluster (default: $SLURM_CONF).")
@click.option("--prometheus", "prometheus_url", default=None, metavar="URL",
              help="Latency: measure the after window live from this Prometheus instead.")
@click.option("--since", "since_text", default=None, metavar="WHEN",
              help="With --prometheus: the after window (2h, or START/END); default: 1h.")
@click.option("--before", "before", type=click.Path(path_type=Path), default=None,
              help="The investigated bundle (default: the investigation's own target).")
@json_option
@ledger_option
def verify_cmd(investigation_id: str, after: Path | None, slurm_job: str | None,
               slurm_conf: Path | None, prometheus_url: str | None,
               since_text: str | None, before: Path | None, as_json: bool,
               ledger_path: Path | None) -> None:
    """Re-measure after the fix: recovered / partly / not_recovered / regressed_elsewhere, or
    incomparable (exit 3) when the conditions differ. The verdict becomes a ledger row."""
    from goodput_agent.ledger import open_ledger
    from goodput_agent.verify.run import verify_investigation

    source = window = None
    if prometheus_url:
        from goodput_agent.metrics.prometheus import PrometheusSource
        from goodput_agent.timespec import looking_back

        window = looking_back(since_text or "1h")
        source = PrometheusSource(prometheus_url, horizon=window)
    if slurm_job:
        after = _collect_after(slurm_job, slurm_conf, _ledger_path(ledger_path), investigation_id)
    with open_ledger(_ledger_path(ledger_path)) as lg:
        result, rows = verify_investigation(lg, investigation_id, after, before, source=source,
                                            window=window)
    if as_json:
        _echo_json({**result.model_dump(mode="json"), "ledger_rows": rows})
    else:
        render_verification(result, TerminalConsole())
    if result.verdict == "incomparable":
        sys.exit(3)


def _collect_after(job: str, slurm_conf: Path | None, ledger: Path, inv_id: str) -> Path:
    """The job as Slurm knows it now, collected beside the ledger (kept: it is the evidence)."""
    from datetime import UTC, datetime

    from goodput_agent.collect.slurm import collect_slurm_job
    from goodput_agent.sources.slurm import SlurmCLI

    out = ledger.parent / "reports" / inv_id / f"after-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    collect_slurm_job(job, out, SlurmCLI(slurm_conf=str(slurm_conf) if slurm_conf else None))
    return out


def render_verification(r: Any, console: Console) -> None:
    color = {"recovered": "green", "partly": "yellow", "incomparable": "cyan"}.get(r.verdict,
                                                                                   "red")
    body = [f"[bold {color}]{markup(r.verdict)}[/]  {markup(r.summary)}"]
    body += [f"condition: {markup(c)}" for c in r.conditions]
    console.print(Panel("\n".join(body), title=f"Verify ({r.kind})"))
    if r.phases:
        t = Table(title="Before / after", expand=True)
        for col in ("phase", "healthy", "before", "after"):
            t.add_column(col, justify="left" if col == "phase" else "right")
        for p in r.phases:
            t.add_row(markup(p.phase), *("—" if v is None else f"{v:.3g} {p.unit}"
                                 for v in (p.healthy, p.before, p.after)))
        console.print(t)
    for n in [*r.notes, *(f"evidence: {e}" for e in r.evidence[:10])]:
        console.print(f"[dim]{markup(n)}[/]")


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
    from goodput_agent.approval.identity import cli_identity
    from goodput_agent.ledger import open_ledger
    from goodput_agent.toolkit import MutatingTool, registry

    who = cli_identity(author, _policy(None).approval.delegates)
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

    with open_ledger(_ledger_path(ledger_path)) as lg:
        known = claim_ids_of(lg, investigation_id)
        claims = list(claim_ids) or known[:1]
        if not claims or not set(claims) <= set(known):
            raise BadInput(f"{lg.path}: investigation {investigation_id} has no claim "
                           f"{sorted(set(claims) - set(known)) or ''}".rstrip())
        aid = lg.record_action(investigation_id, tool, args, True,
                               f"proposed by {who.shown()}: {why.strip()}", claims)
    if as_json:
        _echo_json({"action_id": aid, "tool": tool, "args": args, "claims": claims})
    else:
        click.echo(line(f"action {aid} proposed: {tool} {json.dumps(args)} (approve with "
                        f"`goodput approve {aid} --as NAME`)"))
