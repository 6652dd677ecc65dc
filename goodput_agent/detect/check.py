"""`goodput check` and the watch's live look at one running job: observe, assess, keep the
stacks beside the ledger, record the investigation. Read-only towards the cluster.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.analysis.live.stall import StallSettings
from goodput_agent.core.events import Event
from goodput_agent.detect.assess import Finding, assess
from goodput_agent.detect.record import Read, evidence, record
from goodput_agent.detect.slurm_job import DumpSettings, SlurmLook, look
from goodput_agent.ledger import Ledger
from goodput_agent.report import Report


class CheckOptions(BaseModel):
    dumps: DumpSettings = Field(default_factory=DumpSettings)
    stall: StallSettings = Field(default_factory=StallSettings)
    prometheus_url: str | None = None
    node_label: str = "Hostname"
    extra_metrics: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = 30.0


class CheckResult(BaseModel):
    finding: Finding
    report: Report
    stacks_dir: str | None = None


def _out_dir(ledger: Ledger, target: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", target)[:100]
    return ledger.path.parent / "reports" / f"live-{safe}-{stamp}"


def _save_stacks(out: Path, lk: SlurmLook) -> dict[int, tuple[str, int]]:
    """Each node's dump output as it came (the evidence), and where each rank's begins."""
    where: dict[int, tuple[str, int]] = {}
    if lk.stacks is None:
        return where
    folder = out / "stacks"
    folder.mkdir(parents=True, exist_ok=True)
    pid_rank = {pid: rank for rank, pid in lk.stacks.rank_pids.items()}
    for node, text in lk.stacks.raw.items():
        path = folder / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', node)}.txt"
        path.write_text(text)
        for n, line in enumerate(text.splitlines(), 1):
            m = re.match(r"@@proc pid=(\d+)", line)
            if m and int(m.group(1)) in pid_rank:
                where[pid_rank[int(m.group(1))]] = (str(path), n)
    return where


def _events(f: Finding, lk: SlurmLook, stack_at: dict[int, tuple[str, int]],
            fs_queries: list) -> tuple[list[Event], list[Event]]:
    support: list[Event] = []
    against: list[Event] = []
    if getattr(lk, "query", None) and getattr(lk, "last_values", None):
        t, v = lk.last_values[-1]
        support.append(evidence("prometheus", 0, ", ".join(
            f"{datetime.fromtimestamp(ts, UTC).isoformat()} {val:g}" for ts, val in
            lk.last_values), f"the step counter's last samples: {f.stall.reason}", at=t,
            span=lk.query))
    if lk.progress and lk.progress.marks:
        m = lk.progress.marks[-1]
        support.append(evidence(lk.progress.path, m.line, m.text,
                                f"last progress line: {f.stall.reason}", at=m.t))
    if f.stacks is not None:
        for p in f.stacks.culprits[:8]:
            path, line = stack_at.get(p.rank, ("stacks", 0))
            support.append(evidence(path, line, " <- ".join(p.stack),
                                    f"rank {p.rank}: {p.state} at {p.where}", node=p.node,
                                    rank=p.rank))
        dom = f.stacks.dominant
        if dom is not None:
            path, line = stack_at.get(dom.rank, ("stacks", 0))
            ev = evidence(path, line, " <- ".join(dom.stack),
                          f"{len(f.stacks.dominant_ranks)} ranks {dom.state} at {dom.where}",
                          node=dom.node, rank=dom.rank)
            (support if f.kind == "hang" else against).append(ev)
    if f.failslow is not None:
        for slow in f.failslow.slow[:2]:
            for d in slow.deviations:
                q = next((q for q in fs_queries if q.metric == d.metric), None)
                support.append(evidence(
                    "prometheus", 0, f"{slow.node} {d.metric} {d.value:.4g}, peers' median "
                    f"{d.peers_median:.4g} ({d.relative:+.1%}, z {d.z:+.1f})",
                    f"{slow.node}: {d.metric} apart from its peers", node=slow.node,
                    span=f"{q.promql} @ {q.window.end.isoformat()}" if q else d.metric))
    return support, against


def check_slurm_job(job_id: str, ledger: Ledger, cli, options: CheckOptions,  # noqa: ANN001
                    now: float | None = None) -> CheckResult:
    t0 = time.perf_counter()
    lk = look(cli, job_id, options.dumps, options.stall, now)
    reads = [Read(tool="slurm_job_progress", args={"job": job_id}, ms=_ms(t0), summary={
        "state": lk.job.state, "nodes": len(lk.job.nodes), "stdout": lk.job.stdout,
        "progress_marks": len(lk.progress.marks) if lk.progress else 0})]
    target = f"slurm-job-{job_id}"
    return _conclude(ledger, target, f"is running job {job_id} stalled or slowed?", lk,
                     lk.job.nodes, reads, options, "slurm", job_id, _out_dir(ledger, target))


def check_k8s_job(ref: str, ledger: Ledger, source, options: CheckOptions,  # noqa: ANN001
                  kubectl=None, now: float | None = None) -> CheckResult:  # noqa: ANN001
    """`source`: a sources.k8s.K8sSource; `kubectl`: a detect.k8s_job.KubectlSettings."""
    from goodput_agent.detect.k8s_job import look as k8s_look

    target = f"k8s-job-{ref}"
    out = _out_dir(ledger, target)
    t0 = time.perf_counter()
    lk = k8s_look(source, ref, out, options.dumps, options.stall, kubectl, now)
    reads = [Read(tool="k8s_job_progress", args={"job": ref}, ms=_ms(t0), summary={
        "pods": len(lk.pods), "progress_marks": len(lk.progress.marks) if lk.progress else 0})]
    nodes = sorted({p["node"] for p in lk.pods if p["node"]})
    return _conclude(ledger, target, f"is running job {ref} stalled or slowed?", lk, nodes,
                     reads, options, "kubernetes", None, out)


def check_prometheus_job(selector: str, metric: str, ledger: Ledger, options: CheckOptions,
                         nodes: list[str] | None = None, now: float | None = None) -> CheckResult:
    """A job known only by its labels in Prometheus: progress from its step counter."""
    from goodput_agent.detect.prom_job import look as prom_look
    from goodput_agent.metrics.prometheus import PrometheusSource

    assert options.prometheus_url
    src = PrometheusSource(options.prometheus_url, timeout_s=options.timeout_s)
    t0 = time.perf_counter()
    lk = prom_look(src, selector, metric, options.node_label, nodes, now)
    reads = [Read(tool="step_counter", args={"query": lk.query}, ms=_ms(t0), summary={
        "samples": len(lk.observation.samples or []), "rises": len(lk.observation.progress),
        "nodes": len(lk.nodes)})]
    target = f"prometheus-{selector}"
    out = _out_dir(ledger, target)
    result = _conclude(ledger, target, f"is the job {selector} stalled or slowed?", lk,
                       lk.nodes, reads, options, "prometheus", None, out)
    return result


def _conclude(ledger: Ledger, target: str, question: str, lk, nodes: list[str],  # noqa: ANN001
              reads: list[Read], options: CheckOptions, scheduler: str, job: str | None,
              out: Path) -> CheckResult:
    """The stacks and metrics read, the finding assessed, its evidence kept, all recorded."""
    if lk.stacks is not None:
        reads.append(Read(tool="rank_stacks", args={"command": lk.stacks.command},
                          summary={"ranks": len(lk.stacks.dumps),
                                   "errors": lk.stacks.node_errors}))
    fs_queries: list = []
    if options.prometheus_url and nodes:
        from goodput_agent.detect.metrics import failslow
        from goodput_agent.metrics.prometheus import PrometheusSource

        t1 = time.perf_counter()
        src = PrometheusSource(options.prometheus_url, timeout_s=options.timeout_s)
        result = failslow(src, nodes, node_label=options.node_label,
                          extra=options.extra_metrics)
        lk.observation.failslow, fs_queries = result.verdict, result.queries
        reads.append(Read(tool="failslow_metrics", ms=_ms(t1),
                          args={"prometheus": options.prometheus_url, "nodes": len(nodes)},
                          summary={"metrics": result.verdict.metrics,
                                   "errors": [q.error for q in result.queries if q.error]}))
    finding = assess(lk.observation, options.stall)
    stack_at = _save_stacks(out, lk)
    support, against = _events(finding, lk, stack_at, fs_queries)
    if finding.kind == "hang" and finding.node and options.prometheus_url:
        support += node_health(finding, options, reads, lk.observation.now)
    report = record(ledger, target, question, finding, reads, support, against, scheduler,
                    job, lk.missing)
    return CheckResult(finding=finding, report=report,
                       stacks_dir=str(out / "stacks") if stack_at else None)


def node_health(f: Finding, options: CheckOptions, reads: list[Read],
                at: float) -> list[Event]:
    """The hung rank's node in DCGM over the last hour (metrics/dcgm_health.py): an Xid or
    an uncorrectable error there makes the hang the hardware's, and the proposal a drain."""
    from datetime import timedelta

    from goodput_agent.metrics.dcgm_health import gpu_health
    from goodput_agent.metrics.prometheus import PrometheusSource
    from goodput_agent.metrics.source import TimeWindow

    assert options.prometheus_url and f.node
    t0 = time.perf_counter()
    end = datetime.fromtimestamp(at, UTC)
    src = PrometheusSource(options.prometheus_url, timeout_s=options.timeout_s)
    health = gpu_health(src, TimeWindow(start=end - timedelta(hours=1), end=end), {f.node})
    reads.append(Read(tool="node_health", args={"node": f.node}, ms=_ms(t0),
                      summary={"gpus": len(health.gpus), "errors": health.errors[:3]}))
    out = []
    for g in health.gpus:
        for problem in g.problems:
            f.node_problems.append(f"{g.host} GPU {g.gpu}: {problem}")
            out.append(evidence("prometheus", 0, f"{g.host} GPU {g.gpu}: {problem}",
                                f"the hung rank's node: {problem}", node=g.host,
                                span=f"{health.queries[0] if health.queries else 'dcgm'}"))
    if f.node_problems:
        f.summary += "; its node: " + "; ".join(f.node_problems[:3])
    return out


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)
