"""Which approvals of an action still stand, and whether they are enough: an approval binds
the tool, the arguments' hash and the evidence digest, is single-use and expires; under the
two-person rule the standing approvals must come from that many different people."""

from __future__ import annotations

from datetime import datetime

from goodput_agent.approval import store


def standing(evs: list[store.Event], tool: str, a_hash: str, ev_digest: str,
             now: datetime) -> tuple[list[store.Event], list[str]]:
    """The approvals that would let this call run now, newest first and one per person;
    when there is none, why not (the newest approval's reason)."""
    approvals = [e for e in evs if e.kind == "approval"]
    if not approvals:
        return [], ["no approval: every mutating tool needs an explicit approval"]
    used = store.used_approvals(evs)
    valid: list[store.Event] = []
    why: list[str] = []
    for a in reversed(approvals):
        reason = _why_not(a, used, tool, a_hash, ev_digest, now)
        if reason:
            why.append(reason)
        elif a.actor not in {v.actor for v in valid}:
            valid.append(a)
    return valid, [] if valid else why[:1]


def _why_not(a: store.Event, used: set[int], tool: str, a_hash: str, ev_digest: str,
             now: datetime) -> str | None:
    if a.id in used:
        return f"approval {a.id} was already used (single-use)"
    if a.tool != tool:
        return f"approval {a.id} is for {a.tool}, not {tool}"
    if a.args_hash != a_hash:
        return f"approval {a.id} binds arguments {a.args_hash}, these are {a_hash}"
    if a.evidence_digest != ev_digest:
        return f"approval {a.id} was given on other evidence ({a.evidence_digest}, now {ev_digest})"
    if a.expires_at is None or now >= a.expires_at:
        return f"approval {a.id} expired at {a.expires_at:%Y-%m-%d %H:%M:%S %Z}"
    return None


def shortfall(valid: list[store.Event], required: int, tool: str) -> list[str]:
    """Why the standing approvals are not enough under the two-person rule."""
    if len(valid) >= required:
        return []
    names = ", ".join(sorted(str(a.actor) for a in valid)) or "nobody"
    return [f"two-person rule: {tool} here needs {required} approvals by different people; "
            f"approved so far by {names} — another person the policy lists must approve"]


def already_approved_by(valid: list[store.Event], person: str) -> store.Event | None:
    return next((a for a in valid if a.actor == person), None)
