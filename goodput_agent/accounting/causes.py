"""Why an attempt failed: the ledger's failure investigation of that attempt, or a new one.

An attempt's investigation is of the bundle cut to the attempt: its logs and scheduler rows
between the attempt's start and end (an untimed line goes with the timed line before it), its
incident window the attempt's. That copy lives beside the ledger as
`accounts/<job key>-attempt-<n>/` and is the investigation's target, so the next accounting
finds it again by that name. An investigation of the whole job counts for an attempt when its
first failure falls inside the attempt.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from goodput_agent.accounting.attempts import RunRecord, sacct_rows
from goodput_agent.accounting.model import FailureCause
from goodput_agent.bundle import Inventory
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.records import concluded_reports
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.lines import iter_lines
from goodput_agent.parsing.slurm.sacct_text import pipe_header
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any
from goodput_agent.report import Report

CUT_FORMATS = ("job_log", "kernel_log")
NOT_FOR_FAILURES = ("kineto_trace",)  # the failure question never reads profiler traces
AFTER_END = timedelta(seconds=60)  # a kernel line just after the job was killed still counts
# the controller's view, and sacct without -D, are of the job's last run only
DROPPED_WHEN_EARLIER = ("scontrol_job", "scontrol", "sacct_json", "slurm_json", "sacct_table")


def attempt_key(job_key: str, index: int) -> str:
    return f"{job_key}-attempt-{index}"


def _cause(inv_id: str, report: Report) -> FailureCause:
    rc = report.root_cause
    times = [datetime.fromisoformat(e.time) for e in rc.evidence if e.time]
    return FailureCause(category=rc.category, summary=rc.summary, node=rc.node,
                        time=min(times) if times else None, investigation_id=inv_id,
                        evidence=[e.locator if ":" in e.locator or "[" in e.locator
                                  else f"{e.source}:{e.locator}" for e in rc.evidence][:5])


def _failure_reports(ledger: Ledger, patterns: list[str]) -> list[tuple[str, Report]]:
    """Concluded failure investigations whose target is LIKE one of `patterns`, newest first."""
    out = []
    for inv_id, report_json in concluded_reports(ledger, "failure", patterns):
        try:
            out.append((inv_id, Report.model_validate_json(report_json)))
        except ValueError:
            continue
    return out


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def recorded_cause(ledger: Ledger, key: str, whole_job: list[str], run: RunRecord,
                   only_attempt: bool) -> FailureCause | None:
    """The newest concluded failure investigation of this attempt, if the ledger has one;
    `whole_job`: LIKE patterns of the targets of investigations of the whole job."""
    for inv_id, report in _failure_reports(ledger, ["%/" + like_escape(key)]):
        return _cause(inv_id, report)
    for inv_id, report in _failure_reports(ledger, whole_job):
        cause = _cause(inv_id, report)
        inside = cause.time is not None and run.start <= cause.time <= run.end + AFTER_END
        if inside or (cause.time is None and only_attempt):
            return cause
    return None


def _cut_sacct(src: Path, dst: Path, rel: str, run: RunRecord, clock: ClockPolicy) -> None:
    """The header and the rows (job and steps) that started during the run."""
    ctx = ParseContext(rel_path=rel, clock=clock)
    kept = {rec.line_start for rec, _ in sacct_rows(src, ctx)
            if rec.start is not None and run.start <= rec.start <= run.end}
    with dst.open("w", encoding="utf-8") as out:
        for n, line in iter_lines(src):
            if n in kept or pipe_header(line) is not None:
                out.write(line + "\n")


def _cut_lines(src: Path, dst: Path, start: datetime, end: datetime, clock: ClockPolicy) -> None:
    keep = False
    with dst.open("w", encoding="utf-8") as out:
        for _, line in iter_lines(src):
            hit = parse_any(line, clock)
            if hit is not None:
                keep = start <= hit[0] <= end
            if keep:
                out.write(line + "\n")


def cut_bundle(root: Path, inv: Inventory, run: RunRecord, last: bool, dest: Path,
               next_start: datetime | None = None, origin: Path | None = None) -> Path:
    """A copy of the bundle holding only what happened during `run` (and the minute after it,
    unless the next run started sooner)."""
    if dest.exists():
        shutil.rmtree(dest)
    formats = {f.rel_path: f.format for f in inv.files}
    start, end = run.start, run.end + AFTER_END
    if next_start is not None:
        end = max(run.end, min(end, next_start))
    for src in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = src.relative_to(root).as_posix()
        fmt = formats.get(rel)
        if (not last and fmt in DROPPED_WHEN_EARLIER) or fmt in NOT_FOR_FAILURES:
            continue
        dst = dest / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if fmt in CUT_FORMATS and src.suffix != ".gz":
            _cut_lines(src, dst, start, end, inv.clock)
        elif fmt == "sacct_pipe":
            _cut_sacct(src, dst, rel, run, inv.clock)
        elif rel != "incident.yaml":
            shutil.copyfile(src, dst)
    spec = inv.incident.model_dump(mode="json", exclude_none=True)
    spec.update({"window": {"start": run.start.isoformat(), "end": run.end.isoformat()},
                 "question": f"why did attempt {run.job_id} of job "
                             f"{inv.incident.job or run.job_id} fail?",
                 "kind": "failure",
                 # where the run came from: the account page finds the job's bundle again
                 "account_of": str((origin or root).resolve()), "account_key": dest.name})
    (dest / "incident.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return dest


def investigate_attempt(root: Path, inv: Inventory, run: RunRecord, next_start: datetime | None,
                        key: str, ledger: Ledger, origin: Path | None = None) -> FailureCause:
    """`root`: the opened bundle; `origin`: what was given (a .tar.gz is opened elsewhere)."""
    from goodput_agent.investigate import investigate_bundle

    sub = cut_bundle(root, inv, run, next_start is None, ledger.path.parent / "accounts" / key,
                     next_start, origin)
    report = investigate_bundle(sub, ledger, kind="failure")
    return _cause(report.investigation_id or "", report)
