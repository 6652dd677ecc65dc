"""A generated fleet history for `goodput eval --suite fleet`: jobs on nodes over a month,
with the truth planted — repeat-offender nodes that fail more often per GPU-hour, healthy busy
nodes that fail often only because they run much more, and nodes with a couple of coincidental
failures. Failed jobs are written into a ledger through the ledger's own API (the rows an
investigation writes: investigation, evidence, verdict claim, conclusion with its report);
the whole history goes to a `sacct -a -X -P` file for exposure.

Failures are drawn as the physics would have them: each node of a job fails after an
exponential time with its own rate per GPU-hour; the first failure before the job's end ends
the job there. Other failures (OOMs, application errors, time limits, preemption) strike
jobs whatever node they ran on; an application error's verdict names the node of the rank
that crashed, as a real one does, without the node being at fault.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from goodput_agent import __version__
from goodput_agent.ledger import Ledger
from goodput_agent.report import EvidenceItem, Report, Retry, RootCause

START = datetime(2026, 10, 1, tzinfo=UTC)
GPUS_PER_NODE = 8
PARTITIONS = ("train", "train-long", "infer", "research")
NODE_CAUSE_MIX = (("gpu_hardware", 0.6), ("node_failure", 0.25), ("network_fault", 0.15))
OTHER_CAUSES = (("application_error", 0.03), ("gpu_oom", 0.015), ("time_limit", 0.01),
                ("preempted", 0.005))
XIDS = ("79", "48", "63", "94", "74")


class FleetPlan(BaseModel):
    seed: int = 16
    nodes: int = 500
    jobs: int = 10_000
    days: int = 30
    offender_multipliers: tuple[float, ...] = (4, 4, 6, 6, 8, 8, 10, 10, 12, 12)
    busy_nodes: int = 25  # healthy, but scheduled this many times more often
    busy_weight: float = 6.0
    # failures a node causes per GPU-hour at the fleet's healthy rate
    base_rate_per_gpu_h: float = 6e-4
    reinvestigated: float = 0.02  # share of failed jobs investigated twice (same bundle)


class FleetTruth(BaseModel):
    offenders: list[str]
    multipliers: dict[str, float]  # each offender's failure rate over the fleet's
    busy: list[str]
    badput_gpu_h: dict[str, float]  # GPU-hours of failed jobs by planted cause
    failures: dict[str, int]
    jobs: int
    ledger: str
    sacct: str


class _Job(BaseModel):
    job_id: str
    partition: str
    account: str
    nodes: list[str]
    start: datetime
    hours: float
    cause: str | None = None
    culprit: str | None = None


def _pick(rng: random.Random, mix: tuple[tuple[str, float], ...]) -> str:
    return rng.choices([m[0] for m in mix], weights=[m[1] for m in mix])[0]


def _fleet(plan: FleetPlan, rng: random.Random) -> tuple[list[str], dict[str, float],
                                                           dict[str, float], list[str]]:
    names = [f"gpu{i:03d}" for i in range(1, plan.nodes + 1)]
    shuffled = rng.sample(names, len(names))
    offenders = shuffled[:len(plan.offender_multipliers)]
    busy = shuffled[len(offenders):len(offenders) + plan.busy_nodes]
    rate = {n: plan.base_rate_per_gpu_h for n in names}
    for n, mult in zip(offenders, plan.offender_multipliers, strict=True):
        rate[n] *= mult
    weight = {n: plan.busy_weight if n in busy else 1.0 for n in names}
    return names, rate, weight, offenders


def _job(i: int, plan: FleetPlan, rng: random.Random, names: list[str],
         weight: dict[str, float], rate: dict[str, float]) -> _Job:
    p = rng.randrange(len(PARTITIONS))
    pool = names[p::len(PARTITIONS)]
    size = rng.choice((1, 1, 1, 2, 2, 4, 8))
    chosen: list[str] = []
    while len(chosen) < size:
        n = rng.choices(pool, weights=[weight[x] for x in pool])[0]
        if n not in chosen:
            chosen.append(n)
    hours = min(72.0, max(0.2, rng.lognormvariate(1.4, 0.9)))
    start = START + timedelta(seconds=rng.uniform(0, plan.days * 86400 - hours * 3600))
    job = _Job(job_id=str(100_000 + i), partition=PARTITIONS[p],
               account=f"acct-{rng.randrange(12) + 1:02d}", nodes=chosen, start=start,
               hours=hours)
    first = min((rng.expovariate(rate[n] * GPUS_PER_NODE), n) for n in chosen)
    if first[0] < hours:
        job.hours, job.cause, job.culprit = max(first[0], 0.01), _pick(rng, NODE_CAUSE_MIX), \
            first[1]
        return job
    for cause, share in OTHER_CAUSES:
        if rng.random() < share:
            job.cause = cause
            job.culprit = chosen[0] if cause == "application_error" else None
            if cause != "time_limit":
                job.hours = max(0.01, rng.uniform(0.05, 1.0) * hours)
            return job
    return job


def _excerpt(job: _Job, rng: random.Random) -> tuple[str, str]:
    node = job.culprit or job.nodes[0]
    if job.cause == "gpu_hardware":
        return "kern.log", (f"{node} kernel: NVRM: Xid (PCI:0000:{rng.randrange(16, 255):02x}:00)"
                            f": {rng.choice(XIDS)}, pid={rng.randrange(1000, 99999)}, "
                            "GPU has fallen off the bus.")
    if job.cause == "node_failure":
        return "sacct.txt", f"{job.job_id}|NODE_FAIL|0:0|{node}"
    if job.cause == "network_fault":
        return f"slurm-{job.job_id}.out", (f"[{node}] NCCL WARN NET/IB : Got completion with "
                                           "error 12, opcode 0, len 0, vendor err 129")
    return f"slurm-{job.job_id}.out", f"[{node}] job {job.job_id} ended: {job.cause}"


def _record(ledger: Ledger, job: _Job, root: Path, rng: random.Random, stamp: str) -> None:
    target = str(root / "reports" / f"slurm-job-{job.job_id}-{stamp}" / "bundle")
    assert job.cause is not None
    inv = ledger.start_investigation(f"why did job {job.job_id} fail?", "failure", target,
                                     "offline", __version__)
    source, excerpt = _excerpt(job, rng)
    ev = ledger.record_evidence(inv, None, source, f"{source}:1", excerpt, None)
    confidence = round(rng.uniform(0.7, 0.95), 2)
    statement = f"job {job.job_id} failed: {job.cause}" + (
        f" on {job.culprit}" if job.culprit else "")
    ledger.record_claim(inv, statement, job.cause, confidence, "supported", [ev], [],
                        node=job.culprit)
    report = Report(investigation_id=inv, kind="failure", question=f"job {job.job_id}",
                    root_cause=RootCause(category=job.cause, summary=statement,  # type: ignore[arg-type]
                                         node=job.culprit, confidence=confidence,
                                         evidence=[EvidenceItem(source=source,
                                                                locator=f"{source}:1",
                                                                excerpt=excerpt, id=ev)]),
                    retry=Retry(useful=None, why="generated"))
    ledger.record_conclusion(inv, job.cause, confidence, 0, report.to_json())


def _compress(nodes: list[str]) -> str:
    """A Slurm host list: gpu[003,017] (the parser expands it back)."""
    if len(nodes) == 1:
        return nodes[0]
    return "gpu[" + ",".join(sorted(n.removeprefix("gpu") for n in nodes)) + "]"


def _sacct_line(job: _Job) -> str:
    end = job.start + timedelta(hours=job.hours)
    state = {"node_failure": "NODE_FAIL", "time_limit": "TIMEOUT", "preempted": "PREEMPTED",
             None: "COMPLETED"}.get(job.cause, "FAILED")
    secs = int(job.hours * 3600)
    elapsed = f"{secs // 86400}-{secs % 86400 // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
    return "|".join((job.job_id, _compress(job.nodes),
                     f"billing={len(job.nodes) * 8},cpu={len(job.nodes) * 64},"
                     f"gres/gpu={len(job.nodes) * GPUS_PER_NODE},node={len(job.nodes)}",
                     elapsed, f"{job.start:%Y-%m-%dT%H:%M:%S}", f"{end:%Y-%m-%dT%H:%M:%S}",
                     job.partition, job.account, state))


def generate_fleet(out: Path, plan: FleetPlan | None = None) -> FleetTruth:
    """Write out/ledger.duckdb, out/sacct-history.txt; return the planted truth."""
    plan = plan or FleetPlan()
    rng = random.Random(plan.seed)
    names, rate, weight, offenders = _fleet(plan, rng)
    jobs = [_job(i, plan, rng, names, weight, rate) for i in range(plan.jobs)]
    out.mkdir(parents=True, exist_ok=True)
    sacct = out / "sacct-history.txt"
    sacct.write_text("JobID|NodeList|AllocTRES|Elapsed|Start|End|Partition|Account|State\n"
                     + "\n".join(_sacct_line(j) for j in jobs) + "\n")
    failed = [j for j in jobs if j.cause]
    ledger_path = out / "ledger.duckdb"
    ledger_path.unlink(missing_ok=True)
    # one write session, one transaction: the same rows, written in seconds, not minutes
    with Ledger(ledger_path) as ledger, ledger.writing():
        for j in failed:
            stamp = (j.start + timedelta(hours=j.hours, minutes=5)).strftime("%Y%m%dT%H%M%SZ")
            for _ in range(2 if rng.random() < plan.reinvestigated else 1):
                _record(ledger, j, out, rng, stamp)
    badput: dict[str, float] = {}
    counts: dict[str, int] = {}
    for j in failed:
        assert j.cause is not None
        badput[j.cause] = badput.get(j.cause, 0.0) + j.hours * len(j.nodes) * GPUS_PER_NODE
        counts[j.cause] = counts.get(j.cause, 0) + 1
    busy = [n for n in names if weight[n] > 1.0]
    mult = dict(zip(offenders, plan.offender_multipliers, strict=True))
    return FleetTruth(offenders=sorted(offenders), multipliers=mult, busy=busy, badput_gpu_h=badput,
                      failures=counts, jobs=len(jobs), ledger=str(ledger_path), sacct=str(sacct))
