"""Was every line of the bundle read, and which files hold lines that read as a failure that no
parser understood: what an `unknown` verdict rests on when nothing named a cause
(abstention.py). The job-log tool records both as facts (tools/job_log_events.py: the bundle's,
under BUNDLE_FACTS; parsing/failure_words.py: each free-text file's); every question's analysis
weighs them here, the same way."""

from __future__ import annotations

from collections.abc import Iterable

from goodput_agent.core.events import Event
from goodput_agent.parsing.failure_words import FACT

BUNDLE_FACTS = "<bundle>"  # the key of the bundle's own facts among the per-file facts


def not_read_whole(facts: dict[str, dict]) -> str | None:
    """Why not every line of the bundle was read for a failure's words (a file unread, a file
    no failure tool reads, a free-text file not scanned), or None when every line was."""
    bundle = facts.get(BUNDLE_FACTS) or {}
    files = int(bundle.get("bundle_files") or 0)
    if not files:
        return "the bundle's files are not known"
    if unread := bundle.get("bundle_unread"):
        return f"{len(unread)} file{'s' if len(unread) != 1 else ''} could not be read"
    if others := bundle.get("not_read_for_failure"):
        return f"no failure tool reads {', '.join(others)}"
    if len(scanned(facts)) < int(bundle.get("free_text_files") or 0):
        return "not every free-text file was scanned for a failure's words"
    return None


def scanned(facts: dict[str, dict]) -> dict[str, dict]:
    """Each scanned free-text file's failure-words fact ({"unexplained": n, "lines": [...]})."""
    return {path: f[FACT] for path, f in facts.items() if isinstance(f.get(FACT), dict)}


def loud_files(facts: dict[str, dict]) -> dict[str, dict]:
    """The scanned files with lines that read as a failure and that no parser understood."""
    return {path: f for path, f in scanned(facts).items() if f.get("unexplained")}


def where(loud: dict[str, dict]) -> str:
    """The loud files and their lines, the first three files, for a report."""
    return "; ".join(f"{path}: line{'s' if len(f['lines']) > 1 else ''} "
                     f"{', '.join(str(n) for n in f['lines'])}"
                     for path, f in sorted(loud.items())[:3])


def unread_metrics(facts: dict[str, dict]) -> list[str]:
    """The bundle's metrics files (the first five), for a question that does not read them."""
    return list((facts.get(BUNDLE_FACTS) or {}).get("metrics_files") or [])


def nothing_reads_as_fault(facts: dict[str, dict], events: Iterable[Event]) -> bool:
    """For a question that reads the bundle's lines, not its metrics' numbers: every file of
    it read, none of them a metrics file (a GPU's clocks may name the cause), no event of a
    failure class parsed from it, and no line that reads as a failure left unexplained."""
    return not_read_whole(facts) is None and not unread_metrics(facts) \
        and not loud_files(facts) and not any(e.category not in (None, "unknown") for e in events)
