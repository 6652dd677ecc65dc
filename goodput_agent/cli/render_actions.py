"""The audit chain of each proposed action, for `goodput ledger show`: evidence → claim →
proposal → approval → execution → verification, in the order the ledger recorded them."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.tree import Tree

from goodput_agent.core.untrusted import markup
from goodput_agent.ledger import InvestigationRecord

_STYLE = {"approval": "green", "rejection": "red", "refusal": "red", "execution": "bold",
          "execution_started": "dim", "verification": "cyan"}


def _when(v: Any) -> str:
    return v.strftime("%Y-%m-%d %H:%M:%S") if hasattr(v, "strftime") else str(v or "")


def _event_text(e: dict[str, Any]) -> str:
    d = json.loads(e["detail_json"]) if e.get("detail_json") else {}
    head = f"{e['kind']} #{e['id']} {_when(e['occurred_at'])}" + (
        f" by {e['actor']}" if e.get("actor") else "")
    if e["kind"] == "approval":
        return (f"{head}; expires {_when(e['expires_at'])}; binds args {e['args_hash']}, "
                f"evidence {e['evidence_digest']}")
    if e["kind"] in ("refusal", "rejection"):
        return f"{head}: {e['reason']}"
    if e["kind"] == "execution_started":
        return f"{head} with approval #{e['approval_id']}"
    if e["kind"] == "execution":
        out = d.get("output") or {}
        rcs = ", ".join(f"rc {r['rc']}" for r in out.get("results") or [])
        return (f"{head}: {'ok' if e['ok'] else 'FAILED'} — {out.get('command') or ''}"
                f"{' (' + rcs + ')' if rcs else ''}{' — ' + e['reason'] if e['reason'] else ''}")
    if e["kind"] == "verification":
        return f"{head}: {e['reason']} — {d.get('summary', '')}"
    return head


def action_status_of(events: list[dict[str, Any]], action_id: int) -> str:
    from goodput_agent.approval.store import Event, status_of

    mine = [Event(**{**e, "detail": None}) for e in events if e["action_id"] == action_id]
    return status_of(mine)


def render_action_chain(rec: InvestigationRecord, console: Console) -> None:
    events = [{k: v for k, v in e.items() if k != "detail"} for e in rec.action_events]
    evidence = {e["id"]: e for e in rec.evidence}
    claims = {c["id"]: c for c in rec.claims}
    root = Tree("[bold]Actions: evidence → claim → proposal → approval → execution → "
                "verification[/]")
    for a in rec.actions:
        status = action_status_of([{**e, "detail_json": None} for e in events], a["id"])
        node = root.add(f"action #{a['id']} [bold]{markup(a['tool'])}[/] "
                        f"{markup(a['args_json'])} — {markup(status)}"
                        f"{' (mutating)' if a['mutating'] else ''}")
        for cid in json.loads(a["claim_ids"] or "[]"):
            c = claims.get(cid)
            if c is None:
                continue
            cl = node.add(f"claim #{cid} {markup(c['category'])} {c['confidence']:.2f}: "
                          f"{markup(str(c['statement'])[:160])}")
            for eid in json.loads(c["supporting"] or "[]")[:5]:
                ev = evidence.get(eid)
                if ev:
                    cl.add(f"[dim]evidence #{eid} {markup(ev['locator'])} "
                           f"{markup(ev['digest'])}[/]")
        if a["rationale"]:
            node.add(f"proposal: {markup(a['rationale'])}")
        for e in (e for e in rec.action_events if e["action_id"] == a["id"]):
            node.add(f"[{_STYLE.get(e['kind'], '')}]{markup(_event_text(e))}[/]")
    own = [e for e in rec.action_events if e["action_id"] is None]
    if own:  # no action proposed: the advice was carried out by a person, then measured
        node = root.add("the investigation itself (advice carried out by a person)")
        for e in own:
            node.add(f"[{_STYLE.get(e['kind'], '')}]{markup(_event_text(e))}[/]")
    console.print(root)
    render_what_ran(rec, console)


def render_what_ran(rec: InvestigationRecord, console: Console) -> None:
    """Each action Goodput ran (or that was rejected), exactly as the ledger recorded it, as
    `goodput actions` shows it: the command, exit status and output, the diff, who approved
    and how authenticated, under which policy, and the verification."""
    from goodput_agent.approval.decision import run_record
    from goodput_agent.approval.store import Event
    from goodput_agent.cli.action_views import render_run

    for a in rec.actions:
        evs = [Event(**{**e, "detail": json.loads(e["detail_json"]) if e.get("detail_json")
                        else e.get("detail")})
               for e in rec.action_events if e["action_id"] == a["id"]]
        if any(e.kind in ("execution_started", "rejection") for e in evs):
            render_run(run_record(evs), console,
                       title=f"What ran: action #{a['id']} {a['tool']}")
