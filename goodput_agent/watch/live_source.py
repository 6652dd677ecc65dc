"""The watch's live source: every running Slurm job, looked at each poll (every 10 s by
default) for a stall or a slow node, while it still runs.

Each poll lists the running jobs (`squeue -t RUNNING`, the filters of `--slurm` applied),
takes one look at each (detect/slurm_job.py: progress from its output; the ranks' stacks only
when it is silent past an ordinary step), and turns an alarm into a trigger the watch
investigates like any other (the investigation looks again and records the evidence). One
incident per episode: a stall is keyed by the job and its last progress time (the same hang
seen twice is one incident; a second hang after progress resumed is another), a slow node by
the job and the node. Nothing here acts: proposals go through `goodput approve`.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from goodput_agent.core.errors import BadInput
from goodput_agent.detect.assess import Finding, assess
from goodput_agent.detect.check import CheckOptions
from goodput_agent.detect.progress import ProgressCache
from goodput_agent.detect.slurm_job import look
from goodput_agent.sources.errors import SourceError
from goodput_agent.sources.slurm import SlurmCLI
from goodput_agent.watch.slurm_source import SlurmFilters
from goodput_agent.watch.trigger import Poll, SourceDown, Trigger

log = logging.getLogger(__name__)
LIVE_INTERVAL_S = 10.0
SQUEUE_FORMAT = "%i|%P|%a|%u|%D"


class SlurmLiveSource:
    name = "slurm-live"

    def __init__(self, cli: SlurmCLI, filters: SlurmFilters, options: CheckOptions,
                 interval_s: float = LIVE_INTERVAL_S, cluster: str = "slurm"):
        self.cli, self.filters, self.options = cli, filters, options
        self.interval_s = interval_s
        self.cluster = cluster
        self.progress = ProgressCache()  # each job's output read once, then what it appends

    def running(self) -> list[str]:
        try:
            text, _ = self.cli.call(["squeue", "-h", "-t", "RUNNING", "-o", SQUEUE_FORMAT])
        except SourceError as exc:
            raise SourceDown(str(exc)) from None
        out = []
        f = self.filters
        for row in text.splitlines():
            parts = row.strip().split("|")
            if len(parts) < 5 or not parts[0].replace("_", "").isdigit():
                continue
            job, partition, account, user, nodes = parts[:5]
            if ((f.partitions and partition not in f.partitions)
                    or (f.accounts and account not in f.accounts)
                    or (f.users and user not in f.users)
                    or (nodes.isdigit() and int(nodes) < f.min_nodes)):
                continue
            out.append(job)
        return out

    def finding(self, job: str) -> Finding | None:
        try:
            lk = look(self.cli, job, self.options.dumps, self.options.stall,
                      cache=self.progress)
        except BadInput:  # ended between squeue and scontrol, or unreadable: next poll
            return None
        if self.options.prometheus_url and lk.job.nodes:
            from goodput_agent.detect.metrics import failslow
            from goodput_agent.metrics.prometheus import PrometheusSource

            try:
                src = PrometheusSource(self.options.prometheus_url,
                                       timeout_s=self.options.timeout_s)
                lk.observation.failslow = failslow(
                    src, lk.job.nodes, node_label=self.options.node_label,
                    extra=self.options.extra_metrics).verdict
            except Exception as exc:  # noqa: BLE001 - metrics missing: judge the rest
                log.warning("live: fail-slow metrics of job %s: %s", job, exc)
        return assess(lk.observation, self.options.stall)

    def poll(self, cursor: str | None) -> Poll:
        triggers = []
        for job in self.running():
            f = self.finding(job)
            if f is None or not f.alarm:
                continue
            anchor = (f"stall:{int(f.stall.last_progress or 0)}" if f.kind == "hang"
                      else f"slow:{f.node}")
            triggers.append(Trigger(
                source="slurm", key=f"live:{self.cluster}:{job}:{anchor}", question="live",
                subject=job, state=f.kind.upper(), occurred_at=datetime.now(UTC),
                nodes=[f.node] if f.node else [], collect={"live_slurm_job": job},
                detail=f.summary[:500]))
        return Poll(triggers=triggers, cursor=str(int(time.time())))
