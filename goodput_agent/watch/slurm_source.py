"""The Slurm watch source: jobs that ended badly (`sacct`, from a persisted cursor) and nodes
that went DOWN or DRAIN (`sinfo -R`).

Jobs. Each poll reads `sacct -a -X -D -P` from the cursor's end time less an overlap (slurmdbd
records a job's end a little after it happens, and not always in order), keeps the allocations
that ended FAILED, NODE_FAIL, BOOT_FAIL, TIMEOUT, OUT_OF_MEMORY or PREEMPTED, or CANCELLED by
the system (uid 0 or SlurmUser; a user's own `scancel` is not an incident, nor a CANCELLED that
names no uid), and applies the filters. `-D` lists every attempt of a requeued job: each is its
own incident, keyed `slurm:<cluster>:<job id>:<attempt start, epoch s>` (Slurm 22.05's sacct has
no restart count; the start time names the attempt as uniquely, across restarts). The cursor is
the newest (end time, job id) seen; what the overlap re-reads is deduplicated by the key.

Nodes. `sinfo -R` lists nodes with a reason now: a node DOWN or DRAIN is a "node" trigger keyed
`slurm-node:<cluster>:<node>:<DOWN|DRAIN>:<since>`, so the same outage is one incident however
often it is seen, and the node failing again later is a new one. A failed `sinfo` (controller
down) does not stop job detection from accounting; a failed `sacct` is SourceDown.

The rows are read by the bundle's own parsers (parsing/slurm.py), not parsed again here.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from goodput_agent.core.events import Event
from goodput_agent.parsing.nodelist import expand_nodelist
from goodput_agent.parsing.timefmt import ClockPolicy
from goodput_agent.sources.errors import SourceError
from goodput_agent.sources.slurm import SlurmCLI, SlurmOutput, local_zone_name
from goodput_agent.sources.slurm_job import parse_output
from goodput_agent.watch.trigger import Poll, SourceDown, Trigger

WATCHED_STATES = frozenset({"FAILED", "NODE_FAIL", "BOOT_FAIL", "TIMEOUT", "OUT_OF_MEMORY",
                            "PREEMPTED"})
SACCT_WATCH_FIELDS = ("JobID,JobName,State,ExitCode,NodeList,NNodes,Start,End,Partition,"
                      "Account,User,AllocTRES,Reason,Cluster")
OVERLAP = timedelta(minutes=2)
TOPOLOGY_TTL_S = 600.0
_NODE_PROBLEM = {"DOWN": "DOWN", "FAIL": "DOWN", "NOT_RESPONDING": "DOWN", "DRAIN": "DRAIN",
                 "DRAINED": "DRAIN", "DRAINING": "DRAIN"}
_GPUS = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")


class SlurmFilters(BaseModel):
    partitions: list[str] = Field(default_factory=list)
    accounts: list[str] = Field(default_factory=list)
    users: list[str] = Field(default_factory=list)
    min_nodes: int = 0
    min_gpus: int = 0
    node_events: bool = True


class Cursor(BaseModel):
    end: datetime  # the newest job end seen, and its job id
    job_id: str = ""
    # the watch's first start (--since, or then), kept as the cursor moves on: node events and
    # jobs that ended before it are not incidents (a node drained for weeks is not news, and
    # the overlap a later poll re-reads never reaches back past it)
    nodes_since: datetime | None = None


def floor_of(start: Cursor, stored: str | None) -> datetime:
    """The earliest job end a poll reports: the first poll nothing before its start; a later
    one re-reads the overlap (the store's keys drop what was seen), never past the first start."""
    if stored is None:
        return start.end
    floor = start.end - OVERLAP
    return max(floor, start.nodes_since) if start.nodes_since is not None else floor


def gpus_of(tres: str | None) -> int:
    """GPUs in an AllocTRES string: the plain gres/gpu total, else the typed ones summed."""
    text = tres or ""
    plain = re.search(r"gres/gpu=(\d+)", text)
    return int(plain.group(1)) if plain else sum(int(n) for n in _GPUS.findall(text))


def system_uids(config_text: str) -> set[int]:
    m = re.search(r"^SlurmUser\s*=\s*\S*?\((\d+)\)", config_text, re.M)
    return {0} | ({int(m.group(1))} if m else set())


def switches_of(topology_text: str) -> dict[str, str]:
    """node -> its leaf switch (Level=0) from `scontrol show topology`."""
    found: dict[str, str] = {}
    for m in re.finditer(r"SwitchName=(\S+)\s+Level=0\b.*?\bNodes=(\S+)", topology_text):
        for node in expand_nodelist(m.group(2)):
            found.setdefault(node, m.group(1))
    return found


class SlurmWatchSource:
    name = "slurm"

    def __init__(self, cli: SlurmCLI | None = None, filters: SlurmFilters | None = None,
                 since: datetime | None = None):
        self._base = cli or SlurmCLI()
        self.cli = self._base
        self.filters = filters or SlurmFilters()
        self.since = since
        self.zone = local_zone_name(self.cli.env)
        self._config: dict[str, Any] | None = None
        self._topology: tuple[float, dict[str, str]] = (0.0, {})

    @property
    def clock(self) -> ClockPolicy:
        return ClockPolicy(tz_name=self.zone)

    def poll(self, cursor: str | None) -> Poll:
        now = datetime.now(UTC)
        # a fresh CLI per poll: SlurmCLI remembers a controller found down for its lifetime
        self.cli = SlurmCLI(env=self._base.env, timeout_s=self._base.timeout_s)
        start = Cursor.model_validate_json(cursor) if cursor else \
            Cursor(end=self.since or now, nodes_since=self.since or now)
        config = self._cluster_config()
        sacct = self._call("sacct.txt", "ended jobs", self._sacct_argv(start.end - OVERLAP, now))
        # the first poll reports nothing that ended before its start (--since, or now); later
        # ones re-read the overlap, where the store's keys drop what was already seen
        triggers, newest = self._job_triggers(sacct, config, start, floor_of(start, cursor))
        if self.filters.node_events:
            triggers += [t for t in self._node_triggers(config)
                         if start.nodes_since is None or t.occurred_at >= start.nodes_since]
        newest.nodes_since = start.nodes_since
        return Poll(triggers=triggers, cursor=newest.model_dump_json())

    # --- reading ------------------------------------------------------------------------

    def _call(self, name: str, what: str, argv: list[str]) -> SlurmOutput:
        try:
            return self.cli.output(name, what, argv)
        except SourceError as exc:
            raise SourceDown(exc.message) from None

    def _cluster_config(self) -> dict[str, Any]:
        if self._config is None:
            text = self._call("config.txt", "cluster config", ["scontrol", "show", "config"]).text
            m = re.search(r"^ClusterName\s*=\s*(\S+)", text, re.M)
            self._config = {"cluster": m.group(1) if m else "slurm", "uids": system_uids(text)}
        return self._config

    def _local(self, ts: datetime) -> str:
        return ts.astimezone(ZoneInfo(self.zone)).strftime("%Y-%m-%dT%H:%M:%S")

    def _sacct_argv(self, start: datetime, end: datetime) -> list[str]:
        argv = ["sacct", "-X", "-D", "-P", f"--format={SACCT_WATCH_FIELDS}",
                "-S", self._local(start), "-E", self._local(end + timedelta(minutes=1))]
        f = self.filters
        argv += ["-u", ",".join(f.users)] if f.users else ["-a"]
        if f.partitions:
            argv += ["-r", ",".join(f.partitions)]
        if f.accounts:
            argv += ["-A", ",".join(f.accounts)]
        return argv

    def _switches(self) -> dict[str, str]:
        at, known = self._topology
        if time.monotonic() - at > TOPOLOGY_TTL_S or not at:
            try:
                text, _ = self.cli.call(["scontrol", "show", "topology"])
            except SourceError:
                text = ""  # no topology plugin: no switch signal
            self._topology = (time.monotonic(), switches_of(text))
        return self._topology[1]

    # --- jobs -----------------------------------------------------------------------------

    def _job_triggers(self, out: SlurmOutput, config: dict[str, Any], start: Cursor,
                      floor: datetime | None = None) -> tuple[list[Trigger], Cursor]:
        result = parse_output(out, self.clock)
        newest = start
        triggers: list[Trigger] = []
        for e in result.events if result else []:
            d = e.detail
            if d.get("step") or not d.get("end"):
                continue
            end = datetime.fromisoformat(d["end"])
            if (end, str(d.get("job_id"))) > (newest.end, newest.job_id):
                newest = Cursor(end=end, job_id=str(d.get("job_id")))
            if (floor is None or end >= floor) and self._wanted(d, config["uids"]):
                triggers.append(self._job_trigger(e, end, config["cluster"]))
        return triggers, newest

    def _wanted(self, d: dict[str, Any], system: set[int]) -> bool:
        state, by = d.get("state"), d.get("cancelled_by_uid")
        if state not in WATCHED_STATES and not (state == "CANCELLED" and by in system):
            return False
        fields = d.get("fields") or {}
        nnodes = int(fields.get("nnodes") or len(d.get("nodes") or []) or 0)
        return nnodes >= self.filters.min_nodes and \
            gpus_of(fields.get("alloctres")) >= self.filters.min_gpus

    def _job_trigger(self, e: Event, end: datetime, cluster: str) -> Trigger:
        d = e.detail
        fields = d.get("fields") or {}
        job_id = str(d["job_id"])
        attempt = datetime.fromisoformat(d["start"]) if d.get("start") else end
        nodes = list(d.get("nodes") or [])
        switches = sorted({s for n in nodes if (s := self._switches().get(n))})
        reason = "; ".join(x for x in (
            d.get("reason"), f"cancelled by uid {d['cancelled_by_uid']}"
            if d.get("cancelled_by_uid") is not None else None,
            f"exit {d.get('exit_code')}:{d.get('signal') or 0}"
            if d.get("exit_code") is not None else None) if x)
        labels = {k: str(fields[k]) for k in ("partition", "account", "user") if fields.get(k)}
        labels["cluster"] = cluster
        if d.get("name"):
            labels["name"] = str(d["name"])
        if switches:
            labels["switches"] = ",".join(switches)
        return Trigger(source="slurm", key=f"slurm:{cluster}:{job_id}:{int(attempt.timestamp())}",
                       question="failure", subject=job_id, state=str(d["state"]),
                       occurred_at=end, nodes=nodes, collect={"slurm_job": job_id},
                       labels=labels, detail=reason)

    # --- nodes ----------------------------------------------------------------------------

    def _node_triggers(self, config: dict[str, Any]) -> list[Trigger]:
        argv = ["sinfo", "-R", "-o", "%E %u %H %t %N"]
        if self.filters.partitions:
            argv += ["-p", ",".join(self.filters.partitions)]
        try:
            out = self.cli.output("sinfo_R.txt", "nodes with reasons (sinfo -R)", argv)
        except SourceError:
            return []  # the controller is down: job ends still come from accounting
        result = parse_output(out, self.clock)
        triggers: dict[str, Trigger] = {}
        for e in result.events if result else []:
            d = e.detail
            problem = next((_NODE_PROBLEM[s] for s in str(d.get("state", "")).split("+")
                            if s in _NODE_PROBLEM), None)
            if problem is None:
                continue
            since = datetime.fromisoformat(d["reason_time"]) if d.get("reason_time") else None
            for node in d.get("nodes") or []:  # a row naming many nodes: one trigger each
                t = self._node_trigger(node, problem, since, str(d.get("reason")),
                                       config["cluster"])
                triggers[t.key] = t
        return list(triggers.values())

    def _node_trigger(self, node: str, problem: str, since: datetime | None, reason: str,
                      cluster: str) -> Trigger:
        switch = self._switches().get(node)
        return Trigger(
            source="slurm", question="node", subject=node, state=problem,
            key=f"slurm-node:{cluster}:{node}:{problem}:"
                f"{int(since.timestamp()) if since else 'unknown'}",
            occurred_at=since or datetime.now(UTC), nodes=[node], collect={"node": node},
            labels={"cluster": cluster} | ({"switches": switch} if switch else {}),
            detail=reason)
