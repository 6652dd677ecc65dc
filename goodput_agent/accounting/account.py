"""`goodput account`: a job's attempts, each cut into what its GPU-hours went to, with the cause
of every failure from the ledger (investigated when the ledger has none).

Input is a bundle (as `goodput collect` writes it); the live forms collect one first and add
`sacct -D` (every run of a requeued job) to it, so a live account and the account of the
collected bundle are the same.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from goodput_agent.accounting.attempts import (
    OK_STATES,
    SACCT_ATTEMPTS_FILE,
    RunRecord,
    Runs,
    k8s_runs,
    run_window,
    slurm_runs,
)
from goodput_agent.accounting.causes import (
    attempt_key,
    investigate_attempt,
    like_escape,
    recorded_cause,
)
from goodput_agent.accounting.model import Attempt, FailureCause, JobAccount
from goodput_agent.accounting.progress import Progress, interval_saves, read_progress
from goodput_agent.accounting.segments import cut_run, split_input_stall
from goodput_agent.bundle import Bundle, open_bundle
from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger


class AccountOptions(BaseModel):
    checkpoint_interval_s: float | None = None  # when the logs print no checkpoint saves
    gpus: int | None = None  # GPUs per attempt when the scheduler record does not say
    investigate: bool = True  # investigate a failed attempt the ledger has no verdict for
    job_key: str | None = None  # names the attempts' investigations (default: from the job)
    # LIKE patterns of the ledger targets of investigations of the whole job
    whole_job_targets: list[str] = []


def _runs(bundle: Bundle) -> tuple[str, Runs]:
    """("slurm" | "k8s", the job's runs)."""
    inv, root = bundle.inventory, bundle.root
    job = inv.incident.job
    rels = [f.rel_path for f in inv.of_format("sacct_pipe")]
    if SACCT_ATTEMPTS_FILE in rels:  # every run (sacct -D) beats the last run only
        rels = [SACCT_ATTEMPTS_FILE]
    for rel in rels:
        runs = slurm_runs(root / rel, rel, inv.clock, job)
        if runs.runs:
            return "slurm", runs
    pods = root / "k8s" / "pods.json"
    if pods.is_file():
        return "k8s", k8s_runs(pods, "k8s/pods.json")
    raise BadInput(f"{root}: no scheduler record of the job's runs (sacct -P rows or "
                   "k8s/pods.json)")


def job_key(platform: str, bundle: Bundle) -> str:
    """Names the job in its attempts' investigations: slurm-job-4812, k8s-job-train-llama."""
    job = bundle.inventory.incident.job or bundle.root.name
    return f"{platform}-job-{job}".replace("/", "-")


def _input_stall_shares(bundle: Bundle) -> list[tuple[float | None, float, str]]:
    """(trace start epoch seconds or None, idle-input share of its steps, trace path)."""
    from goodput_agent.analysis.slowdown.trace_select import load_one
    from goodput_agent.analysis.slowdown.trace_steps import rank_breakdown

    out = []
    for f in bundle.inventory.of_format("kineto_trace"):
        try:
            trace = load_one(bundle.root / f.rel_path, f.rel_path, f.node_hint)
        except BadInput:
            continue
        rb = rank_breakdown(trace)
        total = sum(s.step_us for s in rb.steps)
        if total > 0:
            out.append((trace.meta.started_at, sum(s.idle_input_us for s in rb.steps) / total,
                        f.rel_path))
    return out


def _share_for(run: RunRecord, shares: list[tuple[float | None, float, str]],
               only_run: bool) -> tuple[float, str] | None:
    mine = [(s, p) for t, s, p in shares
            if (t is not None and run.start.timestamp() <= t <= run.end.timestamp())
            or (t is None and only_run)]
    if not mine:
        return None
    return sum(s for s, _ in mine) / len(mine), ", ".join(p for _, p in mine)


def _log_files(bundle: Bundle) -> list[str]:
    """Job logs, which include the program output no other format claimed (a training log
    that prints steps and nothing a failure parser knows is still the job's log)."""
    return [f.rel_path for f in bundle.inventory.of_format("job_log")]


class _Accountant:
    def __init__(self, bundle: Bundle, ledger: Ledger | None, opts: AccountOptions, key: str,
                 whole_job: list[str]):
        self.bundle, self.ledger, self.opts = bundle, ledger, opts
        inv = bundle.inventory
        self.logs = _log_files(bundle)
        self.progress = read_progress([(bundle.root / rel, rel) for rel in self.logs],
                                      inv.clock)
        self.shares = _input_stall_shares(bundle)
        self.notes: list[str] = []
        self.key, self.whole_job = key, whole_job
        self.origin: Path | None = None  # the bundle as given (a folder or a .tar.gz)

    def world_size(self) -> int | None:
        """The largest world size the job's logs state (NCCL's communicator, torch's own
        lines): the ranks, one per GPU."""
        sizes = [r.facts.get("world_size") for f in self.bundle.inventory.of_format("job_log")
                 if (r := self.bundle.parse(f)) is not None]
        return max((n for n in sizes if isinstance(n, int) and n > 0), default=None)

    def cause(self, run: RunRecord, index: int, next_start: datetime | None,
              only: bool) -> FailureCause | None:
        if self.ledger is None:
            return None
        key = attempt_key(self.key, index)
        found = recorded_cause(self.ledger, key, self.whole_job, run, only)
        if found is None and self.opts.investigate:
            found = investigate_attempt(self.bundle.root, self.bundle.inventory, run, next_start,
                                        key, self.ledger, self.origin)
        return found

    def attempt(self, run: RunRecord, index: int, cause: FailureCause | None,
                previous_failure: str | None, only_run: bool) -> Attempt:
        gpus = run.gpus if run.gpus is not None else self.opts.gpus
        if gpus is None and (world := self.world_size()):
            gpus = world
            self.notes.append(f"{run.locator}: no GPU count in the scheduler record: counted "
                              f"as {world} GPUs, the job's world size in its logs (one rank "
                              "per GPU; give --gpus)")
        if gpus is None:
            gpus = 1
            self.notes.append(f"{run.locator}: no GPU count in the scheduler record: counted "
                              "as 1 GPU (give --gpus)")
        failed = run.state not in OK_STATES
        mine = self.progress.of_pod(run.pod).within(run.start, run.end)
        saves = mine.saves
        if not saves and self.opts.checkpoint_interval_s:
            first = mine.steps[0].time if mine.steps else None
            saves = interval_saves(run.start, run.end,
                                   timedelta(seconds=self.opts.checkpoint_interval_s), first)
        segments = cut_run(run.start, run.end, gpus, Progress(steps=mine.steps), saves,
                           cause if failed else None, failed, run.run == 0, previous_failure,
                           bool(self.logs))
        if (share := _share_for(run, self.shares, only_run)) is not None:
            segments = split_input_stall(segments, share[0], share[1])
        return Attempt(index=index, run=run.run, job_id=run.job_id, submit=run.submit,
                       start=run.start, end=run.end, state=run.state, nodes=run.nodes,
                       gpus=gpus, exit_code=run.exit_code, failure=cause if failed else None,
                       segments=segments, group=run.group)

    def attempts(self, runs: list[RunRecord]) -> list[Attempt]:
        """Run by run (the pods of one run together): the run's cause once, then each of its
        attempts, the restart of the next run owed to this run's failure."""
        groups: dict[int, list[RunRecord]] = {}
        for r in runs:
            groups.setdefault(r.run, []).append(r)
        ordered = [groups[k] for k in sorted(groups)]
        out: list[Attempt] = []
        previous: str | None = None
        for i, group in enumerate(ordered):
            window = run_window(group)
            following = run_window(ordered[i + 1]).start if i + 1 < len(ordered) else None
            failed = any(r.state not in OK_STATES for r in group)
            only = len(ordered) == 1
            cause = self.cause(window, i, following, only) if failed else None
            for r in group:
                out.append(self.attempt(r, len(out), cause, previous, only))
            previous = (cause.category if cause else "unknown") if failed else None
        return out


def account_bundle(path: Path, ledger: Ledger | None, opts: AccountOptions | None = None,
                   target: str | None = None) -> JobAccount:
    opts = opts or AccountOptions()
    with open_bundle(path) as bundle:
        platform, runs = _runs(bundle)
        key = opts.job_key or job_key(platform, bundle)
        # the whole job investigated: this bundle, or (live) one collected for the same job
        whole_job = [*opts.whole_job_targets, str(path), f"%/{like_escape(key)}-%"]
        acct = _Accountant(bundle, ledger, opts, key, whole_job)
        acct.origin = path
        attempts = acct.attempts(runs.runs)
        notes = runs.notes + acct.notes
        if not acct.logs:
            notes.append("no job log in the bundle: start-up, progress and checkpoints unknown")
        elif not acct.progress.steps:
            notes.append("no timestamped training step line in the job logs")
        if not acct.progress.saves and not opts.checkpoint_interval_s:
            notes.append("no checkpoint save line in the logs (give --checkpoint-interval): "
                         "a failure loses everything since its attempt's first step")
    return JobAccount(target=target or str(path), attempts=attempts, notes=notes)
