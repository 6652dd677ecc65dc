"""Will a retry help, and what to propose: a retry helps only if the cause has changed.

One small function per failure class (`@remedy_for(name)`), found by the verdict's class; a
class in goodput_agent/core/failure_classes.py without one fails `remedy()` and
tests/core/test_failure_classes.py loudly. Proposals are data (a mutating tool's name + arguments);
nothing here executes anything. The mutating tools named here run only through the approval
gate. What no tool does (service a GPU, fix the code, collect stacks) and a change known only
in words are `Advice` for a person: the planner makes a worded config change exact where the
bundle holds the file (script_edits).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

from goodput_agent.analysis.advice import Advice
from goodput_agent.core import failure_classes
from goodput_agent.parsing.kernel_log.xid_catalog import lookup

from .analyze import FailureVerdict


class Proposal(BaseModel):
    tool: str  # a mutating tool's name
    args: dict[str, object]
    mutating: bool = True
    rationale: str


class Remedy(BaseModel):
    retry_useful: bool | None
    why: str
    proposals: list[Proposal] = Field(default_factory=list)
    advice: list[Advice] = Field(default_factory=list)


def isolate_node(node: str | None, scheduler: str | None, job: str | None,
                 reason: str) -> list[Proposal]:
    if node is None:
        return []
    if scheduler == "kubernetes":
        return [Proposal(tool="k8s_cordon_node", args={"node": node}, mutating=True,
                         rationale=f"keep new pods off {node}: {reason}"),
                Proposal(tool="k8s_restart_job_pods", args={"job": job, "avoid_nodes": [node]},
                         mutating=True,
                         rationale="restart the job's pods elsewhere, from the last checkpoint")]
    return [Proposal(tool="slurm_drain_node", args={"node": node, "reason": f"goodput: {reason}"},
                     mutating=True, rationale=f"take {node} out of scheduling: {reason}"),
            Proposal(tool="slurm_requeue_job", args={"job": job, "exclude": [node]}, mutating=True,
                     rationale=f"rerun from the last checkpoint on other nodes, excluding {node}")]


RemedyFn = Callable[[FailureVerdict, str | None, str | None], Remedy]
REMEDIES: dict[str, RemedyFn] = {}


def remedy_for(name: str) -> Callable[[RemedyFn], RemedyFn]:
    """Register `fn(verdict, scheduler, job) -> Remedy` as the remedy of failure class `name`."""
    def register(fn: RemedyFn) -> RemedyFn:
        REMEDIES[name] = fn
        return fn
    return register


def missing_remedies() -> list[str]:
    """The failure classes no remedy function is registered for (none, or a test fails)."""
    return [n for n in failure_classes.names() if n not in REMEDIES]


def remedy(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    if v.category not in failure_classes.names():
        return Remedy(retry_useful=None,
                      why="the cause is unknown, so whether a retry helps is too")
    fn = REMEDIES.get(v.category)
    if fn is None:
        raise LookupError(f"failure class {v.category!r} has no remedy function: add one with "
                          f"@remedy_for({v.category!r}) in "
                          "goodput_agent/analysis/failure/remedy.py")
    return fn(v, scheduler, job)


@remedy_for("gpu_hardware")
def gpu_hardware(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    p = v.primary
    xid = p.detail.get("xid") if p else None
    info = lookup(int(xid)) if xid is not None else None
    reason = (f"Xid {xid} ({info.name}) on GPU {v.gpu or '?'}" if info
              else (p.summary if p else "GPU fault"))
    props = isolate_node(v.node, scheduler, job, reason)
    service = [Advice(topic="gpu_service", text=info.recommendation, rationale=reason,
                      details={"node": v.node, "gpu": v.gpu, "xid": xid,
                               "nvidia_action": info.action})] if info else []
    return Remedy(retry_useful=bool(v.node), proposals=props, advice=service,
                  why=(f"the GPU fault stays with {v.node}: a retry helps only on other "
                       "nodes (drain it, requeue with it excluded)") if v.node
                  else "the faulty node is not identified, so a retry may land on it again")


@remedy_for("network_fault")
def network_fault(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    return Remedy(retry_useful=bool(v.node),
                  proposals=isolate_node(v.node, scheduler, job, "NIC/fabric fault"),
                  why=(f"the link fault is on {v.node}'s path: retry only with it excluded "
                       "and the link checked") if v.node
                  else "the faulty link is not located; a retry may hit it again")


@remedy_for("node_failure")
def node_failure(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    return Remedy(retry_useful=True,
                  proposals=isolate_node(v.node, scheduler, job, "node lost"),
                  why=f"the job lost {v.node or 'a node'}; a retry on healthy nodes can pass "
                      "(resume from the last checkpoint)")


def change_first(why: str, text: str, rationale: str, details: dict[str, object]) -> Remedy:
    """A bare retry fails the same way: the change a person makes first, as advice."""
    return Remedy(retry_useful=False, why=why, advice=[Advice(
        topic="config_change", text=text, details=details, rationale=rationale)])


@remedy_for("gpu_oom")
def gpu_oom(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    d = v.primary.detail if v.primary else {}
    return change_first(
        "the same batch on the same GPU runs out of memory again: change the memory footprint "
        "first", "reduce per-GPU micro-batch size or enable activation checkpointing; set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True if reserved-but-unallocated memory "
        "is large", "make the failing allocation fit before retrying",
        {"rank": v.rank, "tried_bytes": d.get("tried_bytes")})


@remedy_for("host_oom")
def host_oom(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    if v.primary is not None and v.primary.detail.get("shm"):
        return change_first(
            "the DataLoader workers ran out of shared memory (/dev/shm); the same settings fail "
            "again", "give the container more /dev/shm (docker --shm-size, or a Kubernetes "
            "emptyDir with medium: Memory mounted at /dev/shm) or lower DataLoader num_workers",
            "a worker died of SIGBUS on shared memory", {"node": v.node})
    return change_first(
        "host memory use is unchanged on a retry: raise the memory limit or lower host memory "
        "use first", "raise the job's memory limit (Slurm --mem / Kubernetes "
        "resources.limits.memory) or reduce DataLoader num_workers / pinned-memory buffers",
        "killed for host memory (OOM killer, limit, monitor)", {"node": v.node})


@remedy_for("application_error")
def application_error(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    p = v.primary
    frame = (p.detail.get("innermost_frame") if p else None) or {}
    exc = p.detail.get("exc_type") if p else None
    where = f" in {frame.get('file')}:{frame.get('line')}" if frame.get("file") else ""
    return Remedy(retry_useful=False, why="the same code and data fail the same way: fix "
                  "the error first",
                  advice=[Advice(topic="code_fix", text=f"fix the {exc or 'error'}{where} "
                                 "before rerunning", details={
                      "exception": exc, "file": frame.get("file"), "line": frame.get("line"),
                      "function": frame.get("function"), "rank": v.rank},
                      rationale="the failure is in the application; no cluster action helps")])


@remedy_for("hang")
def hang(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    return Remedy(retry_useful=None, why="a hang from a rank stuck in its own work (a data "
                  "step, a barrier only it entered) usually repeats; a retry helps only if "
                  "it was transient",
                  advice=[Advice(topic="collect_stacks", text=(
                      "dump the stuck rank's stack (py-spy dump --pid <rank pid>) and enable "
                      "Flight Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE=2000) before rerunning"),
                      details={"node": v.node, "rank": v.rank},
                      rationale="see where the stuck rank waits before rerunning")])


def resume_from_checkpoint(scheduler: str | None, job: str | None, why: str,
                           rationale: str) -> Remedy:
    """An external stop: nothing in the job is wrong, so a resume from the checkpoint is the
    retry."""
    tool = "k8s_restart_job_pods" if scheduler == "kubernetes" else "slurm_requeue_job"
    return Remedy(retry_useful=True, why=why, proposals=[Proposal(
        tool=tool, mutating=True, rationale=rationale,
        args={"job": job, "resume_from_checkpoint": True})])


@remedy_for("time_limit")
def time_limit(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    return resume_from_checkpoint(
        scheduler, job, "the job ran out of time, not into an error: resume from the last "
        "checkpoint, with a longer limit if it needs one",
        "continue where the time limit stopped it")


@remedy_for("preempted")
def preempted(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    return resume_from_checkpoint(
        scheduler, job, "preemption is external: a requeue resumes from the last checkpoint",
        "the scheduler preempted the job")
