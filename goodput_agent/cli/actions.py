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


def live_context(tool: str, slurm_conf: Path | None, kubeconfig: Path | None):  # noqa: ANN201
    """The cluster clients a mutating tool needs, built only for the family it belongs to."""
    from goodput_agent.toolkit import ToolContext

    if tool.startswith("slurm_"):
        from goodput_agent.sources.slurm import SlurmCLI

        return ToolContext(slurm=SlurmCLI(slurm_conf=str(slurm_conf) if slurm_conf else None))
    if tool.startswith("k8s_"):
        from goodput_agent.sources.errors import SourceError
        from goodput_agent.sources.k8s import K8sSource

        try:  # the same client configuration as the read-only source (kubeconfig or in-cluster)
            api = K8sSource.connect(kubeconfig=kubeconfig).api
        except SourceError as exc:
            raise BadInput(f"{kubeconfig or 'kubeconfig'}: cannot configure the Kubernetes "
                           f"client: {exc}".splitlines()[0]) from None
        return ToolContext(kube=api)
    return ToolContext()


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


def _approve_and_run(lg: Any, p: Any, approver: str, policy: Any, ctx: Any, yes: bool,
                     result: dict[str, Any]) -> Any:
    """The execution row: an action cut off by a crash gets its result from the cluster (it is
    never run again); otherwise confirm, approve, then execute through the gate."""
    from goodput_agent.approval.gate import approve_action, execute_action

    if p.status == "executing":
        from goodput_agent.approval.reconcile import reconcile_action

        execution = reconcile_action(lg, p.action_id, ctx)
    else:
        if not p.allowed:  # records the refusal row and raises
            approve_action(lg, p.action_id, approver, policy)
        if not yes and not click.confirm(f"Approve and run this as {approver}?",
                                         default=False, err=True):
            raise BadInput("not confirmed: nothing approved, nothing ran")
        approval = approve_action(lg, p.action_id, approver, policy)
        result["approval"] = approval.model_dump(mode="json")
        execution = execute_action(lg, p.action_id, ctx, policy)
    result["execution"] = execution.model_dump(mode="json")
    return execution


@click.command("approve")
@click.argument("action_id", type=int)
@click.option("--as", "approver", required=True, help="Who approves (a name the policy lists).")
@click.option("--yes", is_flag=True, help="Do not ask to confirm (the preview is still shown).")
@with_options(cluster_options)
@policy_option
@json_option
@ledger_option
def approve_cmd(action_id: int, approver: str, yes: bool, slurm_conf: Path | None,
                kubeconfig: Path | None, policy_path: Path | None, as_json: bool,
                ledger_path: Path | None) -> None:
    """Show the exact preview of an action, ask to confirm, approve it and execute it through
    the gate. Refused (exit 2, with a ledger row) whenever the policy or the approval says no."""
    from goodput_agent.approval import store
    from goodput_agent.approval.gate import GateRefused, preview_action
    from goodput_agent.ledger import open_ledger

    policy = _policy(policy_path)
    console = TerminalConsole(stderr=as_json)
    with open_ledger(_ledger_path(ledger_path)) as lg:
        action = store.action_row(lg, action_id)
        ctx = live_context(action.tool, slurm_conf, kubeconfig)
        p = preview_action(lg, action_id, policy, ctx)
        render_preview(p, console)
        result: dict[str, Any] = {"preview": p.model_dump(mode="json")}
        try:
            execution = _approve_and_run(lg, p, approver, policy, ctx, yes, result)
        except GateRefused as exc:
            result["refused"] = exc.reason
            if as_json:
                _echo_json(result)
            click.echo(f"goodput: refused: {line(exc.reason)}", err=True)
            sys.exit(EXIT_REFUSED)
        result["status"] = store.status_of(store.events(lg, action_id))
    if as_json:
        _echo_json(result)
    else:
        _render_execution(execution, console)
    if not execution.ok:
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
@click.option("--as", "approver", required=True, help="Who rejects.")
@click.option("--why", required=True, help="The reason, kept in the ledger.")
@json_option
@ledger_option
def reject_cmd(action_id: int, approver: str, why: str, as_json: bool,
               ledger_path: Path | None) -> None:
    """Reject a proposed action, with the reason (a ledger row)."""
    from goodput_agent.approval.gate import reject_action
    from goodput_agent.ledger import open_ledger

    with open_ledger(_ledger_path(ledger_path)) as lg:
        row = reject_action(lg, action_id, approver, why)
    if as_json:
        _echo_json(row.model_dump(mode="json"))
    else:
        click.echo(line(f"action {action_id} rejected by {approver}: {why} (row {row.id})"))


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
@click.option("--since", "since_text", default=None, metavar="WINDOW",
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
@click.option("--as", "author", required=True, help="Who proposes it.")
@click.option("--claim", "claim_ids", type=int, multiple=True,
              help="Claim(s) it rests on (default: the investigation's verdict claim).")
@json_option
@ledger_option
def propose_cmd(investigation_id: str, tool: str, args_json: str, why: str, author: str,
                claim_ids: tuple[int, ...], as_json: bool, ledger_path: Path | None) -> None:
    """Record an exact proposal a person completes (where the remedy could only say a config
    change in words — its `missing` argument says why — this names the file and the edits).
    It still needs an approval to run."""
    from goodput_agent.ledger import open_ledger
    from goodput_agent.toolkit import MutatingTool, registry

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
                               f"proposed by {author.strip()}: {why.strip()}", claims)
    if as_json:
        _echo_json({"action_id": aid, "tool": tool, "args": args, "claims": claims})
    else:
        click.echo(line(f"action {aid} proposed: {tool} {json.dumps(args)} (approve with "
                        f"`goodput approve {aid} --as NAME`)"))
