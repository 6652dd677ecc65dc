"""The rows of the torch profiler's `key_averages().table()`: each row's times in ms.

The table is fixed-width: its dashed rule gives each column's span, its header names them
("Name", "Self CPU", "CPU total", "Self CUDA", "CUDA total", "# of Calls"; other columns, such as
memory or input shapes, are skipped). A row's name may hold spaces ("Memcpy HtoD (Pageable ->
Device)") and is cut by torch with "..."; times are printed as 47.054ms, 1.568s, 28.008us.
A file may hold several tables (a good run's and a slow one's): each is read.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from goodput_agent.parsing.lines import read_head

HEADER = re.compile(r"^\s*Name\s+Self CPU %\s+Self CPU\s+CPU total %", re.M)
_RULE = re.compile(r"^-{4,}(?:  -{4,})+\s*$")
_TIME = re.compile(r"^(?P<v>-?[\d.]+)(?P<unit>us|ms|s|ns)$")
_SCALE = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0}
COLUMNS = {"Self CPU": "self_cpu", "CPU total": "cpu_total", "Self CUDA": "self_cuda",
           "CUDA total": "cuda_total", "# of Calls": "calls"}
MAX_ROWS = 500


class ProfileRow(BaseModel):
    name: str
    line: int
    calls: int = 0
    self_cpu: float | None = None  # ms, over the whole profile
    cpu_total: float | None = None
    self_cuda: float | None = None
    cuda_total: float | None = None


class ProfileTable(BaseModel):
    line: int  # the header's line
    rows: list[ProfileRow]

    @property
    def steps(self) -> int:
        """How many steps were profiled (the ProfilerStep* row's calls), else 1."""
        return next((r.calls for r in self.rows if r.name.startswith("ProfilerStep")
                     and r.calls), 1)


def profile_tables(lines: list[str]) -> list[ProfileTable]:
    tables: list[ProfileTable] = []
    i = 0
    while i + 2 < len(lines):
        if _RULE.match(lines[i]) and _RULE.match(lines[i + 2]) and "Name" in lines[i + 1]:
            spans = [m.span() for m in re.finditer(r"-+", lines[i].rstrip())]
            names = _header(lines[i + 1], spans)
            table, i = _rows(lines, i + 3, spans, names)
            tables.append(table)
        else:
            i += 1
    return tables


def _rows(lines: list[str], start: int, spans: list[tuple[int, int]], names: list[str]
          ) -> tuple[ProfileTable, int]:
    rows: list[ProfileRow] = []
    i = start
    while i < len(lines) and not _RULE.match(lines[i]) and lines[i].strip():
        cells = _cells(lines[i], spans)
        row = ProfileRow(name=cells[0], line=i + 1)
        for name, cell in zip(names[1:], cells[1:], strict=False):
            field = COLUMNS.get(name)
            if field == "calls" and cell.isdigit():
                row.calls = int(cell)
            elif field and (m := _TIME.match(cell)):
                setattr(row, field, float(m["v"]) * _SCALE[m["unit"]])
        if len(rows) < MAX_ROWS:
            rows.append(row)
        i += 1
    return ProfileTable(line=start - 1, rows=rows), i + 1


def _header(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """The column names in order: split where two spaces part them (a name holds one at
    most), which holds where a long name spills past its column's rule."""
    names = re.split(r"\s{2,}", line.strip())
    return names if len(names) == len(spans) else _cells(line, spans)


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """The row's cells by the rule's spans; the name column also takes what spills left of
    it (a right-aligned name longer than the rule is printed whole by some versions)."""
    ends = [b for _, b in spans]
    cells = [line[: ends[0]].strip()]
    cells += [line[b_prev:b].strip() for b_prev, b in zip(ends, ends[1:], strict=False)]
    return cells


def has_profile_table(path: Path) -> bool:
    """Whether a file's head holds a key_averages table's header."""
    return bool(HEADER.search(read_head(path).decode("utf-8", errors="replace")))
