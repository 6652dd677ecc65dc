"""What a job's logs say about its progress: training steps and checkpoint saves, on one clock.

Steps use the vocabulary the failure side already reads (tools/log_activity.py PROGRESS: step,
global step, iteration, epoch, loss; lines that also report an error are not progress).
Checkpoint saves are matched per framework, with the line formats taken from the frameworks'
own source (named beside each pattern). A save that prints a start and an end line has a
duration; one that prints a single line is a checkpoint at that instant. Step lines need a
timestamp of their own; an untimed save line is placed between the timed lines around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.parsing.lines import iter_lines
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any
from goodput_agent.tools.log_activity import NOT_PROGRESS, PROGRESS


@dataclass(frozen=True)
class SavePattern:
    family: str
    start: re.Pattern[str] | None  # a save begins
    end: re.Pattern[str] | None  # a save is complete (the checkpoint is usable from here)


SAVE_PATTERNS: tuple[SavePattern, ...] = (
    # Megatron-LM megatron/training/checkpointing.py save_checkpoint:
    #   print_rank_0('saving checkpoint at iteration {:7d} to {} in {} format'...)
    #   print_rank_0('  successfully saved checkpoint from iteration {:7d} to {}'...)
    SavePattern("megatron",
                re.compile(r"(?<!successfully )saving checkpoint at iteration\s+(?P<step>\d+)"),
                re.compile(r"successfully saved checkpoint from iteration\s+(?P<step>\d+)")),
    # DeepSpeed deepspeed/runtime/engine.py _save_checkpoint:
    #   log_dist(message=f'Saving model checkpoint: {save_path}', ranks=[0]) -> "[Rank 0] ..."
    # deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py:
    #   log_dist(f"[Torch] Checkpoint {tag} is about to be saved!"), "[Torch] Saved {path}.",
    #   commit(): logger.info(f"[Torch] Checkpoint {tag} is ready now!")
    SavePattern("deepspeed",
                re.compile(r"\[Rank \d+\] Saving model checkpoint: |"
                           r"\[Torch\] Checkpoint \S+ is (?:about|begin) to (?:be )?save"),
                re.compile(r"\[Torch\] Checkpoint \S+ is ready now!|\[Torch\] Saved \S")),
    # PyTorch DCP as torchtitan drives it (torchtitan/components/checkpoint.py save):
    #   "Saving the checkpoint (or staging if async is enabled)."
    #   "Finished saving the checkpoint (or staging if async is enabled)in {:.2f} seconds."
    SavePattern("pytorch_dcp",
                re.compile(r"(?<!Finished )Saving the checkpoint \(or staging"),
                re.compile(r"Finished saving the checkpoint")),
    # Lightning src/lightning/pytorch/callbacks/model_checkpoint.py:
    #   rank_zero_info(f"Epoch {epoch:d}, global step {step:d}: {monitor!r} reached ...
    #                  saving model to {filepath!r} as top {k}")  (and without a monitor:
    #   f"Epoch {epoch:d}, global step {step:d}: saving model to {filepath!r}")
    # Lightning prints no line when the file is written: the line marks the checkpoint.
    SavePattern("lightning", None,
                re.compile(r"global step (?P<step>\d+): .*saving model to ")),
    # Hugging Face transformers src/transformers/trainer.py _save:
    #   logger.info(f"Saving model checkpoint to {output_dir}") ("checkpoint-<step>")
    # modeling_utils.py save_pretrained: logger.info(f"Model weights saved in {file}")
    SavePattern("huggingface",
                re.compile(r"Saving model checkpoint to (?:\S*?checkpoint-(?P<step>\d+))?"),
                re.compile(r"Model weights saved in ")),
)


class Step(BaseModel):
    time: datetime
    step: int | None
    locator: str


class Save(BaseModel):
    family: str
    start: datetime  # == end for a family that prints one line
    end: datetime
    step: int | None = None
    locator: str  # of the line that completed it (or its one line)


class Progress(BaseModel):
    steps: list[Step] = Field(default_factory=list)
    saves: list[Save] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)

    def of_pod(self, pod: str | None) -> Progress:
        """The lines of the logs named after the pod, when they show steps (the ranks of a
        job step together: a pod whose logs print none made the progress the others show)."""
        if pod is None:
            return self
        mine = [f for f in self.files if pod in f.rsplit("/", 1)[-1]]
        if not mine:
            return self
        keep = tuple(f + ":" for f in mine)
        steps = [s for s in self.steps if s.locator.startswith(keep)]
        if not steps:
            return self
        return Progress(steps=steps, saves=[s for s in self.saves if s.locator.startswith(keep)],
                        files=mine)

    def within(self, start: datetime, end: datetime) -> Progress:
        return Progress(steps=[s for s in self.steps if start <= s.time <= end],
                        saves=[s for s in self.saves if start <= s.end <= end],
                        files=self.files)


# the step a checkpoint's path names, where its line does not (DeepSpeed's global_step<N> tags,
# the Trainer's checkpoint-<N>, Megatron's iter_<N>)
_PATH_STEP = re.compile(r"global_step(\d+)|checkpoint-(\d+)|iter_(\d+)")


def save_match(line: str) -> tuple[str, str, int | None] | None:
    """(family, "start" | "end", step) when the line is a checkpoint save line."""
    for p in SAVE_PATTERNS:
        for edge, rx in (("end", p.end), ("start", p.start)):
            m = rx.search(line) if rx is not None else None
            if m:
                step = m.groupdict().get("step")
                if not step and (in_path := _PATH_STEP.search(line)):
                    step = next(g for g in in_path.groups() if g)
                return p.family, edge, int(step) if step else None
    return None


def step_match(line: str) -> int | None | bool:
    """The step number of a progress line, True for a progress line without one, else False."""
    hit = PROGRESS.search(line)
    if not hit or NOT_PROGRESS.search(line):
        return False
    return int(hit.group(1)) if hit.group(1) else True


def read_progress(paths: list[tuple[Path, str]], clock: ClockPolicy) -> Progress:
    """Steps and saves of every (file, name in the bundle), in time order."""
    out = Progress(files=[rel for _, rel in paths])
    for path, rel in paths:
        _read_one(path, rel, clock, out)
    out.steps.sort(key=lambda s: s.time)
    out.saves.sort(key=lambda s: s.end)
    return out


_TIME_HINT = re.compile(r"\d:\d\d:\d\d")  # cheap test before parsing a line's time


class _Reader:
    """One file, line by line. A save line without a time of its own (Megatron's print_rank_0
    lines carry none) takes its start from the last timed line before it, and its end from the
    first timed line after it: the save was over by then."""

    def __init__(self, rel: str, clock: ClockPolicy, out: Progress):
        self.rel, self.clock, self.out = rel, clock, out
        self.opened: dict[str, tuple[datetime, int | None]] = {}  # family -> begun, not ended
        # family -> the save whose "saved" lines are still coming (one per file written);
        # a step line closes it
        self.ending: dict[str, int] = {}
        self.last_timed: str | None = None  # the last line that looked timed, parsed lazily
        self.pending: list[int] = []  # saves whose end waits for the next timed line

    def time_of(self, line: str | None) -> datetime | None:
        if line is None or not _TIME_HINT.search(line):
            return None
        hit = parse_any(line, self.clock)
        return hit[0] if hit else None

    def feed(self, n: int, line: str) -> None:
        found = save_match(line)
        step = False if found else step_match(line)
        if not found and step is False:
            if _TIME_HINT.search(line):
                self.last_timed = line
                if self.pending and (ts := self.time_of(line)):
                    self.resolve(ts)
            return
        ts = self.time_of(line)
        carried = ts is None
        if ts is None:
            ts = self.time_of(self.last_timed)
            if ts is None or found is None:  # an untimed step line is not placed
                return
        else:
            self.last_timed = line
            self.resolve(ts)
        loc = f"{self.rel}:{n}"
        if found is None:
            self.ending.clear()
            self.out.steps.append(Step(time=ts, step=None if step is True else int(step),
                                       locator=loc))
            return
        self.save_line(found, ts, loc, carried)

    def resolve(self, ts: datetime) -> None:
        for i in self.pending:
            if ts > self.out.saves[i].end:
                self.out.saves[i] = self.out.saves[i].model_copy(update={"end": ts})
        self.pending.clear()

    def save_line(self, found: tuple[str, str, int | None], ts: datetime, loc: str,
                  carried: bool) -> None:
        family, edge, number = found
        saves = self.out.saves
        if edge == "start":
            self.opened.setdefault(family, (ts, number))
            self.ending.pop(family, None)
            return
        if family in self.opened:
            began, begun_step = self.opened.pop(family)
            saves.append(Save(family=family, start=began, end=ts,
                              step=number if number is not None else begun_step, locator=loc))
            self.ending[family] = len(saves) - 1
        elif family in self.ending:
            i = self.ending[family]
            saves[i] = saves[i].model_copy(update={"end": max(ts, saves[i].end), "locator": loc})
        else:
            saves.append(Save(family=family, start=ts, end=ts, step=number, locator=loc))
            self.ending[family] = len(saves) - 1
        if carried:
            self.pending.append(self.ending[family])


def _read_one(path: Path, rel: str, clock: ClockPolicy, out: Progress) -> None:
    reader = _Reader(rel, clock, out)
    for n, line in iter_lines(path):
        reader.feed(n, line)


def interval_saves(start: datetime, end: datetime, every: timedelta,
                   first_step: datetime | None) -> list[Save]:
    """Checkpoints assumed every `every` from the first step (logs print none): instants."""
    if every.total_seconds() <= 0 or first_step is None:
        return []
    out, t = [], first_step + every
    while t <= end:
        if t >= start:
            out.append(Save(family="interval", start=t, end=t, locator="--checkpoint-interval"))
        t += every
    return out
