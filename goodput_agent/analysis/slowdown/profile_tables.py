"""Why did training slow down, from torch profiler `key_averages()` tables (no trace).

Two tables, a good run's and a slow one's (files or one file; the slower per profiled step is
the slow one: the question says training got slower), are compared per step (the ProfilerStep*
row's calls) in four groups:
- input: the DataLoader's fetch (`enumerate(DataLoader)...`, `__next__`), CPU total;
- communication: the NCCL kernels' GPU time (without GPU columns, the collectives' CPU total);
- kernels: every other GPU kernel's self time (memory copies aside);
- host: the CPU's own work in operators and launches (self CPU), less the waits (a
  `cuda*Synchronize` waits for the GPU: it is no host work) and the groups above.
The group that grew by at least half the step's growth, while every other group grew by less
than a quarter of that, names the class: input -> input_stall, communication ->
communication, host -> host_overhead; kernels -> unknown (throttling, a changed shape or a new
kernel: the tables cannot tell them apart). Tables are aggregates: no timeline shows what
overlapped, and one rank's table cannot tell a slower collective from one that waits for a
late rank; every class here is at most MAX_CONFIDENCE and says what would confirm it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel

from goodput_agent.analysis.abstention import NOTHING_TO_COMPARE, SILENCE
from goodput_agent.core.events import Event, EventKind, Locator, Role
from goodput_agent.parsing.profile_table import ProfileRow, ProfileTable

from .from_logs import MAX_CONFIDENCE
from .model import SlowdownVerdict

SLOWER = 1.2  # the slow table's step at least this much longer than the good one's
WINNER_SHARE = 0.5  # of the step's growth
HELD = 0.25  # of the winner's growth
CLASS = {"input": "input_stall", "communication": "communication", "host": "host_overhead",
         "kernels": None}
WHAT = {"input": "the DataLoader's fetch (CPU)", "communication": "the NCCL collectives' GPU "
        "time", "kernels": "the other GPU kernels' time", "host": "the CPU's own work in "
        "operators and launches"}
_INPUT = re.compile(r"DataLoader|__next__|_next_data")
_NCCL = re.compile(r"nccl|c10d::|all_?reduce|all_?gather|reduce_?scatter|broadcast", re.I)
_WAIT = re.compile(r"Synchronize|cudaStreamWait|ProfilerStep")
_COPY = re.compile(r"^Mem(?:cpy|set)")
LineText = Callable[[str, int], str]


class Table(BaseModel):
    path: str
    table: ProfileTable

    def per_step(self) -> dict[str, float]:
        rows, n = self.table.rows, self.table.steps
        gpu = any(r.self_cuda for r in rows)
        step = next((r.cpu_total for r in rows if r.name.startswith("ProfilerStep")
                     and r.cpu_total), None) or max((r.cpu_total or 0.0) for r in rows)
        groups = {
            "input": max((r.cpu_total or 0.0 for r in rows if _INPUT.search(r.name)),
                         default=0.0),
            "communication": sum(r.self_cuda or 0.0 for r in rows if _NCCL.search(r.name))
            if gpu else max((r.cpu_total or 0.0 for r in rows if _NCCL.search(r.name)),
                            default=0.0),
            "kernels": sum(r.self_cuda or 0.0 for r in rows if not _NCCL.search(r.name)
                           and not _COPY.search(r.name)),
            "host": sum(r.self_cpu or 0.0 for r in rows if not _WAIT.search(r.name)
                        and not _INPUT.search(r.name) and not _NCCL.search(r.name)),
        }
        return {"step": step / n, **{k: v / n for k, v in groups.items()}}

    def top_row(self, group: str) -> ProfileRow | None:
        pick = {"input": lambda r: bool(_INPUT.search(r.name)),
                "communication": lambda r: bool(_NCCL.search(r.name)),
                "kernels": lambda r: bool(r.self_cuda) and not _NCCL.search(r.name),
                "host": lambda r: not _WAIT.search(r.name) and not _INPUT.search(r.name)}[group]
        field = "self_cuda" if group == "kernels" else "self_cpu" if group == "host" \
            else "cpu_total"
        return max((r for r in self.table.rows if pick(r)),
                   key=lambda r: getattr(r, field) or 0.0, default=None)


def tables_of(facts: dict[str, dict]) -> list[Table]:
    return [Table(path=path, table=ProfileTable.model_validate(t))
            for path, f in sorted(facts.items()) for t in f.get("profile_tables") or []]


def profile_verdict(tables: list[Table], line_text: LineText) -> SlowdownVerdict | None:
    """The verdict two or more tables support; one alone holds nothing to compare; None
    without any."""
    if not tables:
        return None
    if len(tables) < 2:
        return SlowdownVerdict(category="unknown", confidence=NOTHING_TO_COMPARE, summary=(
            f"one profiler table ({tables[0].path}): the run it is slower than is not in the "
            "bundle, so nothing says which part of the step grew"), unknowns=[_CONFIRM])
    measured = sorted(((t, t.per_step()) for t in tables), key=lambda x: x[1]["step"])
    (good, g), (slow, s) = measured[0], measured[-1]
    rise = s["step"] - g["step"]
    head = (f"the profiled step went from {g['step']:.1f} ms ({good.path}) to "
            f"{s['step']:.1f} ms ({slow.path})")
    if g["step"] <= 0 or s["step"] < SLOWER * g["step"]:
        return SlowdownVerdict(category="unknown", confidence=SILENCE, summary=(
            f"{head}: under the {SLOWER}x the tables must show to be read as a slowdown"))
    growth = {k: s[k] - g[k] for k in CLASS}
    winner = max(growth, key=lambda k: growth[k])
    held = all(v < HELD * growth[winner] for k, v in growth.items() if k != winner)
    evidence = [e for t, role in ((good, Role.context), (slow, Role.primary))
                if (e := _row_event(t, winner, role, line_text)) is not None]
    grew = (f"{WHAT[winner]} grew from {g[winner]:.1f} to {s[winner]:.1f} ms per step "
            f"(+{growth[winner]:.1f} ms; the step grew {rise:.1f} ms)")
    cls = CLASS[winner]
    if growth[winner] < WINNER_SHARE * rise or not held or cls is None:
        why = ("the other GPU kernels: throttling, a changed shape or a new kernel, which the "
               "tables cannot tell apart" if cls is None and held else
               "no one part of the step carries the growth")
        return SlowdownVerdict(category="unknown", confidence=SILENCE, evidence=evidence,
                               summary=f"{head}; {grew}: {why}", unknowns=[_CONFIRM])
    alternatives = [("straggler", 0.2, "one rank's table cannot tell a slower collective from "
                     "one that waits for a late rank: every rank's table or a trace would")] \
        if cls == "communication" else []
    return SlowdownVerdict(
        category=cls, confidence=MAX_CONFIDENCE, evidence=evidence, alternatives=alternatives,
        summary=f"{head}; {grew} while the other parts held", unknowns=[_CONFIRM])


_CONFIRM = ("profiler tables are aggregates: a Kineto trace of a slow and of a good step would "
            "confirm what overlapped and what waited")


def _row_event(t: Table, group: str, role: Role, line_text: LineText) -> Event | None:
    row = t.top_row(group)
    if row is None:
        return None
    cls = CLASS[group] if role == Role.primary else None
    return Event(kind=EventKind.other, role=role, category=cls,
                 summary=f"profiler row {row.name}", excerpt=line_text(t.path, row.line)
                 or row.name, locator=Locator(path=t.path, line_start=row.line,
                                              line_end=row.line))
