"""sacct as text: --parsable2 (pipe-separated) and the default fixed-width table."""

from __future__ import annotations

import re
from pathlib import Path

from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.lines import iter_lines
from goodput_agent.parsing.slurm.outcomes import (
    build_result,
)
from goodput_agent.parsing.slurm.records import (
    UNDERLINE,
    JobRecord,
    has_program_output,
    head_lines,
    mostly_slurm,
    nodes_of,
    none_if_empty,
    parse_duration,
    parse_exit_code,
    parse_local_time,
    row_excerpt,
    table_share,
    unquote_code,
)

_ID_COLUMNS = ("jobid", "jobidraw")
_JOB_ID = re.compile(r"^\d+(?:[_+][\w\[\]\-,]*)*\+?(?:\.[\w\-]+)?\+?$")


def row_to_job(row: dict[str, str], ctx: ParseContext, line_start: int, line_end: int,
               excerpt: str) -> JobRecord:
    """One sacct row (keys lower-cased column names) as a JobRecord."""
    def take(*names: str) -> str | None:
        for name in names:
            value = row.get(name)
            if value is not None and value.strip() != "":
                return value.strip()
        return None

    code, sig = parse_exit_code(take("exitcode"))
    start, start_clock = parse_local_time(take("start"), ctx)
    end, end_clock = parse_local_time(take("end"), ctx)
    limit = take("timelimitraw")
    known = {"jobid", "jobidraw", "jobname", "state", "exitcode", "derivedexitcode", "nodelist",
             "start", "end", "elapsed", "elapsedraw", "timelimit", "timelimitraw", "reason"}
    extra = {k: v.strip()[:200] for k, v in row.items() if k not in known and v.strip()}
    return JobRecord(
        job_id=take("jobid", "jobidraw"), state_raw=take("state") or "", line_start=line_start,
        line_end=line_end, excerpt=excerpt, name=take("jobname"), exit_code=code, signal=sig,
        derived_exit_code=take("derivedexitcode"), reason=none_if_empty(take("reason")),
        nodes=nodes_of(take("nodelist")), start=start, start_clock=start_clock, end=end,
        end_clock=end_clock,
        elapsed_s=parse_duration(take("elapsedraw")) or parse_duration(take("elapsed")),
        time_limit_s=(float(limit) * 60 if limit and limit.isdigit()
                      else parse_duration(take("timelimit"))),
        extra={"fields": extra} if extra else {})


def pipe_header(line: str) -> list[str] | None:
    low = line.lower()
    if "|" not in line or ("jobid" not in low and "state" not in low):
        return None
    cells = [c.strip().lower() for c in line.split("|")]
    if cells and cells[-1] == "":
        cells = cells[:-1]
    if any(c in ("jobid", "jobidraw", "state") for c in cells):
        return cells
    return None


class SacctPipeParser:
    format = "sacct_pipe"

    def sniff(self, head: str, name: str) -> bool:
        if has_program_output(head):
            return False
        lines = head_lines(head)
        for line in [ln for ln in lines[:20] if ln.strip()][:5]:
            if "|" in line:
                return pipe_header(line) is not None and \
                    mostly_slurm(lines, sum(1 for ln in lines if "|" in ln))
        return False

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        header: list[str] | None = None
        jobs: list[JobRecord] = []
        skipped = 0
        n = 0
        for n, line in iter_lines(path):
            if "|" not in line:
                continue
            line = unquote_code(line)
            new_header = pipe_header(line)
            if new_header is not None:  # no data cell reads "JobID" or "State"
                header = new_header
                continue
            if header is None:
                continue
            cells = line.split("|")
            if len(cells) == len(header) + 1 and cells[-1].strip() == "":
                cells = cells[:-1]  # --parsable ends every row with "|"
            if len(cells) != len(header):
                skipped += 1
                continue
            jobs.append(row_to_job(dict(zip(header, cells, strict=True)), ctx, n, n,
                                    row_excerpt(line)))
        if header is None:
            raise ParseError(f"{ctx.rel_path}: no sacct header line (JobID|State|...) found")
        warnings = [f"{skipped} rows with a wrong number of columns skipped"] if skipped else []
        return build_result(self.format, ctx, jobs, [], n, warnings)


def _table_header_ok(line: str) -> bool:
    tokens = {t.lower() for t in line.split()}
    return bool(tokens & {"jobid", "jobidraw", "state"})


class SacctTableParser:
    format = "sacct_table"

    def sniff(self, head: str, name: str) -> bool:
        if has_program_output(head):
            return False
        lines = head_lines(head)
        return any(UNDERLINE.match(lines[i]) and _table_header_ok(lines[i - 1])
                   and mostly_slurm(lines, table_share(lines, i - 1, _looks_like_sacct_row))
                   for i in range(1, min(len(lines), 40)))

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        jobs: list[JobRecord] = []
        prev = ""
        spans: list[tuple[int, int | None]] | None = None
        names: list[str] = []
        n = 0
        for n, line in iter_lines(path):
            line = unquote_code(line)
            if UNDERLINE.match(line) and _table_header_ok(prev):
                cuts = [m.start() for m in re.finditer(r"-+", line)]
                spans = [(c, cuts[i + 1] if i + 1 < len(cuts) else None)
                         for i, c in enumerate(cuts)]
                names = [prev[a:b].strip().lower() for a, b in spans]
                prev = line
                continue
            prev = line
            if spans is None:
                continue
            if not line.strip():
                spans = None  # the table ended
                continue
            cells = [line[a:b] if b is not None else line[a:] for a, b in spans]
            row = dict(zip(names, cells, strict=True))
            job_id = (row.get("jobid") or row.get("jobidraw") or "").strip()
            if not _JOB_ID.match(job_id):
                continue
            jobs.append(row_to_job(row, ctx, n, n, row_excerpt(line)))
        if not jobs and n == 0:
            raise ParseError(f"{ctx.rel_path}: empty sacct table")
        mark_truncated_steps(jobs)
        return build_result(self.format, ctx, jobs, [], n)


def _looks_like_sacct_row(line: str) -> bool:
    tokens = line.split()
    return bool(tokens) and _JOB_ID.match(tokens[0]) is not None


def mark_truncated_steps(jobs: list[JobRecord]) -> None:
    """A table cuts long ids with '+': "2681683_420+" after job "2681683_420" is its step."""
    seen: set[str] = set()
    for r in jobs:
        if r.job_id and r.job_id.endswith("+") and "." not in r.job_id:
            base = r.job_id.rstrip("+")
            if base in seen:
                r.step = True
                r.extra["id_truncated"] = True
        elif r.job_id and not r.is_step:
            seen.add(r.job_id)
