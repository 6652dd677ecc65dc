"""Exact edits of a job's batch script for an out-of-memory verdict, each tied to the evidence
that justifies it; and the remedy's worded config change turned into an executable
`config_change` (file + edits, previewed as a diff) when the bundle holds the script.

Only edits the evidence supports: halve the per-GPU micro-batch after a CUDA OOM; allocator
`expandable_segments` when PyTorch reported more reserved-but-unallocated memory than the
allocation it failed; a larger `--mem` after a *cgroup* OOM kill (the job's own limit, not the
host's memory). Without the script, or without a line to edit, the proposal stays advice and
says what is missing. Nothing here writes a file: the gate runs `config_change`.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from goodput_agent.analysis.advice import Advice
from goodput_agent.analysis.failure.analyze import FailureVerdict
from goodput_agent.analysis.failure.remedy import Proposal, Remedy
from goodput_agent.bundle import Inventory
from goodput_agent.core.events import EventKind
from goodput_agent.planner.workload_edits import oom_limit_patch

# micro-batch first: a script with both a global and a per-GPU size names the per-GPU one
_BATCH_FLAGS = (r"micro[-_]batch[-_]size", r"per[-_]device[-_]train[-_]batch[-_]size",
                r"train[-_]micro[-_]batch[-_]size[-_]per[-_]gpu", r"batch[-_]size")
_SEP = r"(?P<sep>\s*=\s*|\s+)(?P<n>\d+)\b"
_MEM = re.compile(r"(?<![\w-])(?P<flag>--mem(?:-per-(?:cpu|gpu))?)(?P<sep>=|\s+)"
                  r"(?P<n>\d+)(?P<unit>[KMGTkmgt]?[Bb]?)?(?![\w.])")
_ALLOC_ENV = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
_SCRIPT_HOW = "`goodput collect --slurm-job` saves it: scontrol write batch_script JOB -"


class ScriptEdit(BaseModel):
    old: str
    new: str
    why: str  # the evidence that justifies this edit


def _unique(text: str, token: str, line: str) -> str | None:
    """The smallest text that names this place exactly once: the token, else its line."""
    if text.count(token) == 1:
        return token
    return line if line and text.count(line) == 1 else None


def _line_of(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[text.rfind("\n", 0, start) + 1:end if end >= 0 else len(text)]


def _batch_edit(text: str, where: str) -> tuple[ScriptEdit | None, str | None]:
    for flag in _BATCH_FLAGS:
        m = re.search(rf"(?<![\w-])(?P<flag>(?:--?)?{flag}){_SEP}", text, re.I)
        if m is None:
            continue
        n = int(m["n"])
        if n < 2:
            return None, (f"{m['flag']} is already {n}: a smaller batch is not possible "
                          "(activation checkpointing or more GPUs instead)")
        old = _unique(text, m[0], _line_of(text, m.start()))
        if old is None:
            return None, f"{m[0]!r} occurs more than once in the script: which one is unclear"
        new = old.replace(m[0], f"{m['flag']}{m['sep']}{n // 2}")
        return ScriptEdit(old=old, new=new, why=f"halve the per-GPU batch ({m['flag']} "
                          f"{n} -> {n // 2}) so the failing allocation ({where}) fits"), None
    return None, ("the script names no batch size (--batch-size, --micro-batch-size, "
                  "per_device_train_batch_size): set it where the training config holds it")


def _insert_after_header(text: str, line: str) -> tuple[str, str] | None:
    """Insert `line` after the last #SBATCH line (else after the #! line)."""
    lines = text.splitlines(keepends=True)
    at = max((i for i, ln in enumerate(lines) if ln.startswith("#SBATCH")), default=None)
    if at is None:
        at = 0 if lines and lines[0].startswith("#!") else None
    if at is None or text.count(lines[at]) != 1 or not lines[at].endswith("\n"):
        return None
    return lines[at], lines[at] + line + "\n"


def gpu_oom_edits(text: str, v: FailureVerdict) -> tuple[list[ScriptEdit], list[str]]:
    d = v.primary.detail if v.primary else {}
    where = str(v.primary.locator) if v.primary else "the CUDA OOM"
    edits: list[ScriptEdit] = []
    notes: list[str] = []
    batch, note = _batch_edit(text, where)
    edits += [batch] if batch else []
    notes += [note] if note else []
    free_but_reserved, tried = d.get("reserved_unallocated_bytes"), d.get("tried_bytes")
    if free_but_reserved and tried and free_but_reserved >= tried \
            and "PYTORCH_CUDA_ALLOC_CONF" not in text:
        ins = _insert_after_header(text, f"export {_ALLOC_ENV}")
        if ins:
            edits.append(ScriptEdit(old=ins[0], new=ins[1], why=(
                f"PyTorch held {free_but_reserved / 2**30:.2f} GiB reserved but unallocated, more "
                f"than the {tried / 2**30:.2f} GiB it failed to allocate ({where}): "
                "fragmentation, which expandable segments avoid")))
    return edits, notes


def _cgroup_kill(v: FailureVerdict) -> bool:
    return any(e.kind == EventKind.cgroup_oom or e.detail.get("scope") == "cgroup"
               for e in ([v.primary] if v.primary else []) + v.evidence)


def host_oom_edits(text: str, v: FailureVerdict) -> tuple[list[ScriptEdit], list[str]]:
    if not _cgroup_kill(v):
        return [], ["the kill was the host's OOM killer, not the job's memory limit: a larger "
                    "--mem does not help; lower host memory use (DataLoader num_workers, "
                    "pinned buffers) or run fewer jobs per node"]
    m = _MEM.search(text)
    if m is None:
        return [], ["the script sets no --mem: the limit is the partition's default "
                    "(DefMemPerNode / DefMemPerCPU); add #SBATCH --mem= above the job's peak"]
    old = _unique(text, m[0], _line_of(text, m.start()))
    if old is None:
        return [], [f"{m[0]!r} occurs more than once in the script: which one is unclear"]
    n = int(m["n"])
    new = old.replace(m[0], f"{m['flag']}{m['sep']}{n * 2}{m['unit'] or ''}")
    where = str(v.primary.locator) if v.primary else "the OOM kill"
    return [ScriptEdit(old=old, new=new, why=(
        f"the job's memory cgroup killed it ({where}): double its limit ({m['flag']} "
        f"{n}{m['unit'] or ''} -> {n * 2}{m['unit'] or ''})"))], []


def job_script(inv: Inventory | None, job: str | None) -> Path | None:
    """The bundle's batch script: the job's own (batch_script-<job>.sh) first."""
    scripts = inv.of_format("job_script") if inv else []
    if not scripts or inv is None:
        return None
    own = [f for f in scripts if job and Path(f.rel_path).name == f"batch_script-{job}.sh"]
    return Path(inv.root) / (own or scripts)[0].rel_path


def _edits_for(v: FailureVerdict, text: str) -> tuple[list[ScriptEdit], list[str]]:
    if v.category == "gpu_oom":
        return gpu_oom_edits(text, v)
    return host_oom_edits(text, v)


def _exact(a: Advice, v: FailureVerdict, inv: Inventory | None, job: str | None,
           scheduler: str | None) -> tuple[list[Proposal], Advice | None]:
    """The worded change as exact edits of the job script (and the resubmit that runs them), or
    the advice with what is missing."""
    path = job_script(inv, job)
    if path is None and scheduler == "kubernetes" and v.category == "host_oom":
        patch, why_not = oom_limit_patch(v, inv)
        return ([patch], None) if patch else ([], a.model_copy(update={"missing": why_not}))
    if path is None:
        return [], a.model_copy(update={"missing": f"no job script in the bundle ({_SCRIPT_HOW}):"
                                                   " the change stays advice"})
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], a.model_copy(update={"missing": f"{path}: cannot read the job script: {exc}"})
    edits, notes = _edits_for(v, text)
    if not edits:
        return [], a.model_copy(update={"missing": "; ".join(notes)})
    out = [Proposal(tool="config_change", args={
        "path": str(path), "edits": [{"old": e.old, "new": e.new} for e in edits],
        "change": a.text},
        rationale="; ".join(e.why for e in edits) + (
            ". Slurm's requeue reruns its stored copy of the script: submit the edited "
            "one (sbatch) for the change to take effect"))]
    if job:  # the retry that runs the edit; the gate allows it only after the edit ran
        out.append(Proposal(tool="slurm_resubmit_job", args={"job": job, "script": str(path)},
                            rationale=f"after the edit: submit the edited script again "
                                      f"(job {job} failed with {v.category})"))
    return out, None


def with_script_edits(r: Remedy, v: FailureVerdict, inv: Inventory | None,
                      job: str | None, scheduler: str | None = None) -> Remedy:
    """The remedy, its worded config change replaced by exact edits of the bundle's job script
    where the evidence supports them; otherwise the worded change, as advice saying what is
    missing for an exact one."""
    shm = bool(v.primary and v.primary.detail.get("shm"))
    if v.category not in ("gpu_oom", "host_oom") or shm:
        return r
    proposals, advice = list(r.proposals), []
    for a in r.advice:
        if a.topic != "config_change":
            advice.append(a)
            continue
        exact, left = _exact(a, v, inv, job, scheduler)
        proposals += exact
        advice += [left] if left else []
    return r.model_copy(update={"proposals": proposals, "advice": advice})
