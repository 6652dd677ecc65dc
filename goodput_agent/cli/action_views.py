"""The decision model (approval/decision.py) in the terminal: one action's block, the exact
preview before an approval, what a refusal needs (the policy lines), what ran, and the queue.
Every value from the ledger goes through untrusted.markup."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from goodput_agent.core.untrusted import markup, visible


def _when(v: Any) -> str:
    return v.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if hasattr(v, "strftime") else "—"


def decision_text(v: Any) -> str:
    """One line: the status and what the policy (or the record) says."""
    if v.ran is not None:
        who = ", ".join(f"{a.person} ({a.via})" for a in v.ran.approvers) or "nobody recorded"
        return f"[bold]{markup(v.status)}[/] — approved by {markup(who)} under {markup(v.policy)}"
    if not v.executable:
        return "[yellow]advice for a person[/]: no tool runs it, nothing to approve"
    if v.allowed:
        return f"[green]allowed[/] by {markup(v.policy)}"
    return f"[red]denied[/] by {markup(v.policy)}: " + markup("; ".join(v.reasons))


def action_block(v: Any, extra: list[tuple[str, str]] | None = None) -> Table:
    """One action as label/value rows: readable at any terminal width, unlike one wide row;
    `extra` rows (already markup-safe) go after the decision."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="dim", no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row(f"#{v.action_id}", f"[bold]{markup(v.tool)}[/]  {markup(v.status)}")
    t.add_row("args", markup(" ".join(f"{k}={json.dumps(x)}" for k, x in v.args.items())))
    if v.rationale:
        t.add_row("why", markup(v.rationale))
    t.add_row("claims", markup(", ".join(f"#{c.id} {c.category} ({c.confidence:.2f})"
                                         for c in v.claims) or "none"))
    t.add_row("policy", decision_text(v))
    if v.ran is None and v.executable:
        t.add_row("approvers", markup(f"{', '.join(v.approvers) or 'nobody'} "
                                      f"({v.approvals_required} needed"
                                      + (f"; approved by {', '.join(v.approved_by)}"
                                         if v.approved_by else "") + ")"))
    if v.fix is not None:
        t.add_row("to allow", markup((f"{v.fix.init}\n  writes a policy, or " if v.fix.init
                                      else "") + f"add to {v.fix.policy}:\n"
                                     f"{v.fix.lines.rstrip()}"
                                     + "".join(f"\nstill: {r}" for r in v.fix.remaining)))
    for label, value in extra or []:
        t.add_row(label, value)
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
        return
    for r in p.reasons:
        console.print(f"[red]policy: {markup(r)}[/]")
    fix = getattr(p, "fix", None)
    if fix is not None:
        if fix.init:
            console.print(f"no policy of this site's yet: {markup(fix.init)} writes one")
        console.print(Panel(markup(fix.lines.rstrip()), title=f"to allow it, add to "
                            f"{markup(fix.policy)}"))
        for r in fix.remaining:
            console.print(f"[yellow]no policy line changes this: {markup(r)}[/]")


def render_run(ran: Any, console: Console, title: str = "What ran") -> None:
    """What ran, from the ledger's rows: the command or API call, each command's exit status
    and output, the diff, who approved it and how they were authenticated, the verification."""
    state = {True: "[green]executed[/]", False: "[red]FAILED[/]", None: "[yellow]started, no "
             "result recorded[/]"}[ran.ok]
    body = [f"{state} {_when(ran.finished_at or ran.started_at)}"]
    if ran.rejected:
        body = [f"[red]rejected[/] by {markup(ran.rejected)}"]
    elif ran.started_at is None:
        body = ["[yellow]not run through the gate[/]: Goodput executed nothing for it"]
    body += [f"approved by {markup(a.person)} ({markup(a.via)}"
             f"{': ' + markup(a.detail) if a.detail else ''}) at {_when(a.at)}"
             f"{' under ' + markup(a.policy) if a.policy else ''}" for a in ran.approvers]
    if ran.command:
        body.append(f"command: {markup(ran.command)}")
    for c in ran.commands:
        body.append(f"$ {markup(' '.join(c.argv))}  -> exit {markup(c.rc)}")
        body += [markup(x) for x in (c.stdout.strip(), c.stderr.strip()) if x]
    if ran.error:
        body.append(f"[red]{markup(ran.error)}[/]")
    if ran.response is not None:
        body.append(markup(json.dumps(ran.response, default=str)[:1500]))
    body += [f"verified: {markup(v['verdict'])} — {markup(v.get('summary') or '')}"
             for v in ran.verifications]
    console.print(Panel("\n".join(body), title=title))
    if ran.diff:
        console.print(Panel(Syntax(visible(ran.diff), "diff", word_wrap=True), title="Diff"))


def render_queue(q: Any, console: Console) -> None:
    who = f" for {markup(q.asked_by)}" if q.asked_by else ""
    console.print(f"[bold]Waiting for a decision[/] ({len(q.items)}, oldest first; policy "
                  f"{markup(q.policy)}{who})")
    for w in q.items:
        v = w.view
        you = "[green]may approve[/]" if v.can_approve else (
            "may not (see policy)" if not v.allowed else markup(v.why_not_approve or ""))
        console.print(action_block(v, [
            ("proposed", f"{_when(w.proposed_at)} in {markup(v.investigation_id)}"),
            ("expires", f"approval by {markup(', '.join(v.approved_by))} expires "
                        f"{_when(v.approval_expires_at)}" if v.approval_expires_at else
                        f"an approval lives {v.expires_after_s / 60:g} min once given"),
            ("evidence", markup(v.evidence_digest)),
            ("you", you)]))
    if q.not_executable:
        console.print(f"[dim]{len(q.not_executable)} older row(s) are advice, not actions "
                      f"(nothing to approve): {', '.join(map(str, q.not_executable[:20]))}[/]")


def render_advice(advice: list[Any], console: Console) -> None:
    """What a person should do that no tool runs: text, never an action id or an approval."""
    body = []
    for a in advice:
        body.append(f"[bold]{markup(a.topic)}[/]: {markup(a.text)}")
        body += [f"  because {markup(p.text)}" for p in a.premises]
        if a.missing:
            body.append(f"  [dim]to make it an action: {markup(a.missing)}[/]")
    console.print(Panel("\n".join(body), title="Advice for a person (nothing to approve)"))
