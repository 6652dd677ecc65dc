"""What to do about a slowdown, by cause: proposals (a mutating tool and its arguments) where
a cluster action helps, advice for a person otherwise; nothing here executes."""

from __future__ import annotations

from goodput_agent.analysis.advice import Advice
from goodput_agent.analysis.failure.remedy import Remedy, isolate_node

from .model import SlowdownVerdict


def slowdown_remedy(v: SlowdownVerdict, scheduler: str | None, job: str | None) -> Remedy:
    where = {"rank": v.rank, "node": v.node}
    if v.category == "input_stall":
        return Remedy(retry_useful=False, why="the input pipeline is as slow on a rerun: change "
                      "how batches are loaded first", advice=[Advice(
                          topic="config_change", rationale="the GPU waits for the next batch; "
                          "more loader parallelism and prefetching hide the wait",
                          text="raise DataLoader num_workers, set pin_memory=True and "
                               "persistent_workers=True, raise prefetch_factor; check the "
                               "storage read throughput of the input data", details=where,
                          missing="the DataLoader settings live in the training code, which "
                                  "the bundle does not hold")])
    if v.category == "host_overhead":
        return Remedy(retry_useful=False, why="the host work is in the training code; a rerun "
                      "repeats it", advice=[Advice(
                          topic="code_fix", rationale="the GPU waits for the host to launch work",
                          text="remove per-step host syncs (.item(), .cpu(), printing tensors, "
                               "torch.cuda.synchronize()), fuse small kernels or capture the "
                               "step with CUDA graphs / torch.compile", details=where)])
    if v.category in ("straggler", "gpu_throttling"):
        reason = (f"GPU {v.gpu or '?'} throttles" if v.category == "gpu_throttling"
                  else f"rank {v.rank} is a straggler")
        props = isolate_node(v.node, scheduler, job, f"slow: {reason}")
        advice = [Advice(topic="gpu_service", details={"node": v.node, "gpu": v.gpu},
                         text="check cooling, the power cap (nvidia-smi -q -d "
                              "PERFORMANCE,POWER,TEMPERATURE) and the clock-event reasons",
                         rationale="find why the GPU lowers its clocks before it rejoins")] \
            if v.category == "gpu_throttling" and v.node else []
        return Remedy(retry_useful=bool(props) or None,
                      why="the whole job runs at the pace of the slowest rank: a rerun helps only "
                      "without that GPU/node" if v.node else "the slow rank's host is not known",
                      proposals=props, advice=advice)
    if v.category == "communication":
        return Remedy(retry_useful=None, why="every rank's collectives are slower: the fabric or "
                      "the NCCL setup changed; a rerun helps only if that has changed",
                      advice=[Advice(topic="collect_diagnostics", text=(
                          "run nccl-tests all_reduce_perf across the job's nodes; read the "
                          "InfiniBand port counters (perfquery) and link speed (ibstat); "
                          "NCCL_DEBUG=INFO for the chosen transport"),
                          rationale="measure the fabric outside the job")])
    return Remedy(retry_useful=None, why="no cause established", proposals=[])


def log_remedy(v: SlowdownVerdict) -> Remedy:
    """A straggler told by the log's iteration times alone: who is slow is known, why is not,
    so the least-impact step that would find it, never a drain (issue 27, point 3)."""
    return Remedy(retry_useful=None, why="the log says which rank is slow, not why: find the "
                  "cause before excluding its node", advice=[Advice(
                      topic="collect_diagnostics", details={"rank": v.rank, "node": v.node},
                      text="on that rank's GPU: DCGM/NVML health and clocks (nvidia-smi -q -d "
                           "PERFORMANCE,POWER,TEMPERATURE), a py-spy dump of its process, a "
                           "profiler trace of a few steps; then the node's GPU diagnostics "
                           "(dcgmi diag -r 2)",
                      rationale="the cause (a throttling GPU, host contention, its input "
                                "shard) decides whether to exclude the GPU or the node")])
