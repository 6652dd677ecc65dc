"""Will a retry help, and what to propose: a retry helps only if the cause has changed.

Proposals are data (a mutating tool's name + arguments); nothing here executes anything. The
mutating tools named here run only through the approval gate. What no tool does (service a GPU,
fix the code, collect stacks) and a change known only in words are `Advice` for a person: the
planner makes a worded config change exact where the bundle holds the file (script_edits).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from goodput_agent.analysis.advice import Advice
from goodput_agent.parsing.kernel_log.xid_catalog import lookup

from .analyze import FailureVerdict

# External stops: nothing in the job is wrong, so a resume from the checkpoint is the retry.
RESUMABLE = {
    "time_limit": ("the job ran out of time, not into an error: resume from the last "
                   "checkpoint, with a longer limit if it needs one",
                   "continue where the time limit stopped it"),
    "preempted": ("preemption is external: a requeue resumes from the last checkpoint",
                  "the scheduler preempted the job"),
}


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


def remedy(v: FailureVerdict, scheduler: str | None, job: str | None) -> Remedy:
    cat = v.category
    p = v.primary
    if cat == "gpu_hardware":
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
    if cat == "network_fault":
        return Remedy(retry_useful=bool(v.node),
                      proposals=isolate_node(v.node, scheduler, job, "NIC/fabric fault"),
                      why=(f"the link fault is on {v.node}'s path: retry only with it excluded "
                           "and the link checked") if v.node
                      else "the faulty link is not located; a retry may hit it again")
    if cat == "node_failure":
        return Remedy(retry_useful=True,
                      proposals=isolate_node(v.node, scheduler, job, "node lost"),
                      why=f"the job lost {v.node or 'a node'}; a retry on healthy nodes can pass "
                          "(resume from the last checkpoint)")
    if cat == "gpu_oom":
        d = p.detail if p else {}
        return Remedy(retry_useful=False, why="the same batch on the same GPU runs out of memory "
                      "again: change the memory footprint first",
                      advice=[Advice(topic="config_change", text=(
                          "reduce per-GPU micro-batch size or enable activation checkpointing; "
                          "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True if "
                          "reserved-but-unallocated memory is large"),
                          details={"rank": v.rank, "tried_bytes": d.get("tried_bytes")},
                          rationale="make the failing allocation fit before retrying")])
    if cat == "host_oom" and p is not None and p.detail.get("shm"):
        return Remedy(retry_useful=False, why="the DataLoader workers ran out of shared memory "
                      "(/dev/shm); the same settings fail again",
                      advice=[Advice(topic="config_change", text=(
                          "give the container more /dev/shm (docker --shm-size, or a Kubernetes "
                          "emptyDir with medium: Memory mounted at /dev/shm) or lower "
                          "DataLoader num_workers"), details={"node": v.node},
                          rationale="a worker died of SIGBUS on shared memory")])
    if cat == "host_oom":
        return Remedy(retry_useful=False, why="host memory use is unchanged on a retry: raise "
                      "the memory limit or lower host memory use first",
                      advice=[Advice(topic="config_change", text=(
                          "raise the job's memory limit (Slurm --mem / Kubernetes "
                          "resources.limits.memory) or reduce DataLoader num_workers / "
                          "pinned-memory buffers"), details={"node": v.node},
                          rationale="killed for host memory (OOM killer, limit, monitor)")])
    if cat == "application_error":
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
    if cat == "hang":
        return Remedy(retry_useful=None, why="a hang from a rank stuck in its own work (a data "
                      "step, a barrier only it entered) usually repeats; a retry helps only if "
                      "it was transient",
                      advice=[Advice(topic="collect_stacks", text=(
                          "dump the stuck rank's stack (py-spy dump --pid <rank pid>) and enable "
                          "Flight Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE=2000) before rerunning"),
                          details={"node": v.node, "rank": v.rank},
                          rationale="see where the stuck rank waits before rerunning")])
    if cat in RESUMABLE:
        why, rationale = RESUMABLE[cat]
        tool = "k8s_restart_job_pods" if scheduler == "kubernetes" else "slurm_requeue_job"
        return Remedy(retry_useful=True, why=why, proposals=[Proposal(
            tool=tool, mutating=True, rationale=rationale,
            args={"job": job, "resume_from_checkpoint": True})])
    return Remedy(retry_useful=None, why="the cause is unknown, so whether a retry helps is too")
