"""srun and slurmstepd lines in the job's output: OOM kills, task exits, cancellations."""

from __future__ import annotations

import re
from typing import Any

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.job_log.classify import exit_code_detail
from goodput_agent.parsing.job_log.prefixes import LinePrefix, parse_time_text
from goodput_agent.parsing.job_log.state import LineState, Stream

_SLURM_OOM = re.compile(r"Detected (?P<n>\d+) oom[-_]kill events?(?:\(s\))? in "
                        r"(?:step |StepId=)?"
                        r"(?P<step>\d+(?:\.\w+)?)")
_SLURM_MEMLIMIT = re.compile(r"Exceeded (?:job|step) memory limit|exceeded memory limit")
_SRUN_TASK = re.compile(r"srun: error: (?P<node>[\w.\-]+): tasks? (?P<tasks>[\d,\-\[\] ]+?): "
                        r"(?P<what>Out Of Memory|Exited with exit code \d+|Killed|Terminated|"
                        r"Segmentation fault|Bus error|Aborted|[^,]+)")
_SRUN_NODEFAIL = re.compile(r"(?:srun|salloc): error: Node failure on (?P<node>[\w.\-]+)")
_CANCELLED = re.compile(r"\*\*\* (?P<what>JOB|STEP) (?P<id>[\w.+]+) ON (?P<node>\S+) CANCELLED AT "
                        r"(?P<ts>\S+)(?: DUE TO (?P<reason>[A-Z_ ]+))?")


class SlurmLines(LineState):
    """What Slurm printed into the job's output."""

    def _m_slurm(self, stream: Stream, c: str) -> bool:
        if "srun" not in c and "salloc" not in c and "slurmstepd" not in c \
                and "CANCELLED" not in c:
            return False
        hit = False
        if m := _SLURM_OOM.search(c):
            job = m["step"].split(".")[0]
            self.facts.setdefault("slurm_job_id", job)
            self.add(EventKind.cgroup_oom, Role.primary, "host_oom",
                     f"Slurm cgroup OOM kill in step {m['step']}",
                     {"count": int(m["n"]), "step": m["step"], "job_id": job})
            hit = True
        elif _SLURM_MEMLIMIT.search(c):
            self.add(EventKind.cgroup_oom, Role.primary, "host_oom",
                     "Slurm: memory limit exceeded", {"memory_limit": True})
            hit = True
        if m := _SRUN_TASK.search(c):
            self._srun_task(m)
            hit = True
        if m := _SRUN_NODEFAIL.search(c):
            self.add(EventKind.node_fail, Role.primary, "node_failure",
                     f"Slurm: node failure on {m['node']}", {"node": m["node"]}, node=m["node"])
            hit = True
        if m := _CANCELLED.search(c):
            self._cancelled(m)
            hit = True
        return hit

    def _srun_task(self, m: re.Match[str]) -> None:
        what, node, tasks = m["what"].strip(), m["node"], m["tasks"].strip()
        d: dict[str, Any] = {"node": node, "tasks": tasks, "what": what}
        kw: dict[str, Any] = {"node": node}
        if tasks.isdigit():
            d["task"] = int(tasks)
            kw["prefix"] = LinePrefix(label=int(tasks))
        for task in _task_ids(tasks):  # srun's task ids on that node ("task 4", "tasks 8-15")
            self.srun_task_hosts.setdefault(task, node)
        if what == "Out Of Memory":
            self.add(EventKind.cgroup_oom, Role.primary, "host_oom",
                     f"srun: task {tasks} on {node} ran out of memory", d, **kw)
        elif what.startswith(("Segmentation fault", "Bus error")):
            self.add(EventKind.segfault, Role.primary, "application_error",
                     f"srun: task {tasks} on {node}: {what}", d, **kw)
        elif what.startswith(("Killed", "Terminated", "Aborted")):
            sig = {"K": "SIGKILL", "T": "SIGTERM", "A": "SIGABRT"}[what[0]]
            self.add(EventKind.signal, Role.symptom, None,
                     f"srun: task {tasks} on {node}: {what}", {**d, "signal_name": sig}, **kw)
        else:
            if em := re.match(r"Exited with exit code (\d+)", what):
                d.update(exit_code_detail(int(em[1])))
            self.add(EventKind.exit_status, Role.symptom, None,
                     f"srun: task {tasks} on {node}: {what}", d, **kw)

    def _cancelled(self, m: re.Match[str]) -> None:
        reason = (m["reason"] or "").strip()
        d: dict[str, Any] = {"id": m["id"], "node": m["node"], "at": m["ts"]}
        if reason:
            d["reason"] = reason
        job = m["id"].split(".")[0]
        if job.isdigit():
            self.facts.setdefault("slurm_job_id", job)
        what = m["what"].lower()
        summary = f"Slurm {what} {m['id']} cancelled" + (f" due to {reason.lower()}"
                                                          if reason else "")
        if reason.startswith("TIME LIMIT"):
            kind, role, cat = EventKind.time_limit, Role.primary, "time_limit"
        elif reason.startswith("PREEMPTION"):
            kind, role, cat = EventKind.preempted, Role.primary, "preempted"
        elif reason.startswith("NODE FAIL"):
            kind, role, cat = EventKind.node_fail, Role.primary, "node_failure"
        else:
            kind = EventKind.job_state if what == "job" else EventKind.step_state
            role, cat = Role.symptom, None
        # "ON <node>" is where the reporting slurmstepd ran; a failed node cannot report, so
        # for a node failure it is not the failed node (srun's "Node failure on X" names that)
        node = None if kind == EventKind.node_fail else m["node"]
        if node is None:
            d["reported_on"] = d.pop("node")
        p = self.add(kind, role, cat, summary, d, node=node)
        if t := parse_time_text(m["ts"], self.policy):
            p.ts, p.clock = t


def _task_ids(text: str, limit: int = 4096) -> list[int]:
    """srun's task lists: "4", "8-15", "0,2,5-7"."""
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.extend(range(int(lo), int(hi or lo) + 1)[:limit])
    return out[:limit]
