"""NCCL and c10d lines of a failing collective: watchdog timeouts, IB completion errors,
remote-peer errors, store resets, the flight recorder dump."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta

from goodput_agent.evals.cluster.context import Ctx, NodeRT
from goodput_agent.evals.cluster.spec import PY_SITE
from goodput_agent.evals.cluster.training import Run, _frames


def _wd_2_1(ctx: Ctx, rank: int, t: datetime, caught: str) -> list[str]:
    lines = [
        ctx.c10(rank, t, "E", "ProcessGroupNCCL.cpp:475", caught),
        ctx.c10(
            rank,
            t,
            "E",
            "ProcessGroupNCCL.cpp:489",
            "Some NCCL operations have failed or "
            "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
            "operations might run on corrupted/incomplete data.",
        ),
        ctx.c10(
            rank,
            t,
            "E",
            "ProcessGroupNCCL.cpp:495",
            "To avoid data inconsistency, we are taking the entire process down.",
        ),
        ctx.c10(
            rank,
            t,
            "E",
            "ProcessGroupNCCL.cpp:916",
            f"[Rank {rank}] NCCL watchdog thread terminated with exception: {caught}",
        ),
        "terminate called after throwing an instance of 'std::runtime_error'",
        f"  what():  [Rank {rank}] NCCL watchdog thread terminated with exception: {caught}",
    ]
    return lines


def _wd_2_5(
    ctx: Ctx,
    lines: list[str],
    rank: int,
    t: datetime,
    us: timedelta,
    pg: str,
    seq: int,
    last_enq: int,
    last_comp: int,
) -> None:
    lines.append(
        ctx.c10(
            rank,
            t + us,
            "E",
            "ProcessGroupNCCL.cpp:1785",
            f"{pg} Exception (either an error or timeout) detected by watchdog at "
            f"work: {seq}, last enqueued NCCL work: {last_enq}, last completed NCCL "
            f"work: {last_comp}.",
        )
    )


def watchdog_lines(
    ctx: Ctx,
    rank: int,
    t: datetime,
    run: Run,
    seq: int,
    ran_ms: int,
    last_enq: int,
    last_comp: int,
    frames: bool,
) -> list[str]:
    timeout = ctx.spec.timeout_ms
    work = (
        f"WorkNCCL(SeqNum={seq}, OpType={run.op}, NumelIn={run.numel_in}, "
        f"NumelOut={run.numel_out}, Timeout(ms)={timeout})"
    )
    caught = (
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work} ran for {ran_ms} "
        "milliseconds before timing out."
    )
    us = timedelta(microseconds=170)
    style = ctx.spec.torch
    pg = ctx.pg(rank)
    if style == "2.1":
        return _wd_2_1(ctx, rank, t, caught)
    ln = {"2.3": (563, 1537, 577, 583, 1414, 565)}.get(style, (616, 1834, 630, 636, 1595, 618))
    lines = [ctx.c10(rank, t, "E", f"ProcessGroupNCCL.cpp:{ln[0]}", caught)]
    if style in ("2.5", "2.6"):
        _wd_2_5(ctx, lines, rank, t, us, pg, seq, last_enq, last_comp)
    lines += [
        ctx.c10(
            rank,
            t + 2 * us,
            "E",
            f"ProcessGroupNCCL.cpp:{ln[1]}",
            f"{pg} Timeout at NCCL "
            f"work: {seq}, last enqueued NCCL work: {last_enq}, last completed NCCL work: "
            f"{last_comp}.",
        ),
        ctx.c10(
            rank,
            t + 3 * us,
            "E",
            f"ProcessGroupNCCL.cpp:{ln[2]}",
            f"[Rank {rank}] Some NCCL "
            "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
            "subsequent GPU operations might run on corrupted/incomplete data.",
        ),
        ctx.c10(
            rank,
            t + 4 * us,
            "E",
            f"ProcessGroupNCCL.cpp:{ln[3]}",
            f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
        ),
        ctx.c10(
            rank,
            t + 5 * us,
            "E",
            f"ProcessGroupNCCL.cpp:{ln[4]}",
            f"{pg} Process group watchdog thread terminated with exception: {caught}",
        ),
    ]
    raised = (
        f"Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
        f"ProcessGroupNCCL.cpp:{ln[5]} (most recent call first):"
    )
    if frames:
        lines += [raised, *_frames(ctx, rank), ""]
    lines += [
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {pg} Process group watchdog thread terminated with exception: {caught}",
    ]
    return lines


def ib_completion_lines(
    ctx: Ctx,
    rank: int,
    peer: NodeRT,
    *,
    status: int = 12,
    vendor: int = 129,
    hca: str | None = None,
    channel: int = 0,
) -> list[str]:
    """NCCL's NET/IB completion error as seen by `rank` talking to `peer` (one QP)."""
    node = ctx.node_of(rank)
    pre = ctx.nccl_prefix(rank, 91 + ctx.local(rank))
    hca = hca or node.hcas[ctx.local(rank) % len(node.hcas)]
    port = 40000 + (rank * 7919 + channel * 131) % 25000
    if ctx.nccl >= "2.21":
        first = (
            f"{pre} transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
            f"{peer.ip}<{port}> with status={status} opcode=0 len=0 vendor err {vendor} (Recv) "
            f"localGid ::ffff:{node.ip} remoteGids::ffff:{peer.ip} hca {hca}"
        )
    else:
        first = (
            f"{pre} transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
            f"{peer.ip}<{port}> with error {status}, opcode 0, len 0, vendor err {vendor} (Recv)"
        )
    return [
        first,
        f"{pre} NCCL INFO transport/net.cc:1302 -> 6",
        f"{pre} NCCL INFO proxy.cc:698 -> 6",
        f"{pre} NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
    ]


def remote_error_lines(ctx: Ctx, rank: int, t: datetime, last_error: str) -> list[str]:
    """The watchdog tearing a rank down on ncclRemoteError (a symptom: the peer is gone)."""
    pg = ctx.pg(rank)
    msg = (
        f"{pg} Process group watchdog thread terminated with exception: NCCL error: remote "
        f"process exited or there was a network error, NCCL version {ctx.nccl}"
    )
    what = "terminate called after throwing an instance of 'c10::DistBackendError'"
    return [
        ctx.c10(rank, t, "E", "ProcessGroupNCCL.cpp:1595", msg),
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting "
        "prematurely.",
        "Last error:",
        last_error,
        "Exception raised from checkForNCCLErrorsInternal at /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:2027 (most recent call first):",
        what,
        f"  what():  {msg}",
    ]


def store_reset_lines(ctx: Ctx, rank: int, t: datetime) -> list[str]:
    """TCPStore on rank 0 is gone: the heartbeat monitor's complaints (symptom)."""
    node = ctx.node_of(rank)
    port = 30000 + (rank * 104729) % 30000
    return [
        ctx.c10(
            rank,
            t,
            "W",
            "TCPStore.cpp:131",
            f"[c10d] recvValue failed on SocketImpl(fd="
            f"{60 + rank % 40}, addr=[{node.host}]:{port}, remote=[{ctx.master.host}]:29500): "
            "Connection reset by peer",
        ),
        "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:670 "
        "(most recent call first):",
        ctx.c10(
            rank,
            t + timedelta(microseconds=400),
            "W",
            "ProcessGroupNCCL.cpp:1659",
            f'{ctx.pg(rank)} Failed to check the "should dump" flag on TCPStore, (maybe TCPStore '
            "server has shut down too early), with error: Connection reset by peer",
        ),
    ]


def flight_recorder(
    ctx: Ctx,
    run: Run,
    rank: int,
    last_seq: int,
    states: dict[int, str],
    t_of: Callable[[int], datetime],
    pg_status: tuple[int, int, int],
) -> None:
    names = {
        "ALLREDUCE": "nccl:all_reduce",
        "_ALLGATHER_BASE": "nccl:_all_gather_base",
        "_REDUCE_SCATTER_BASE": "nccl:_reduce_scatter_base",
        "BROADCAST": "nccl:broadcast",
    }
    entries = []
    for seq in range(last_seq - 9, last_seq + 1):
        state = states.get(seq, "completed")
        created = t_of(seq)
        ns = int(created.timestamp() * 1e9)
        entries.append(
            {
                "record_id": seq - run.seq0,
                "pg_id": 0,
                "process_group": ["0", "default_pg"],
                "collective_seq_id": seq,
                "p2p_seq_id": 0,
                "op_id": seq,
                "profiling_name": names[run.op],
                "time_created_ns": ns,
                "duration_ms": round(3.2 + (seq % 7) * 0.41, 3) if state == "completed" else None,
                "input_sizes": [[run.numel_in]],
                "input_dtypes": ["BFloat16"],
                "output_sizes": [[run.numel_out]],
                "output_dtypes": ["BFloat16"],
                "state": state,
                "time_discovered_started_ns": ns + 91000 if state != "scheduled" else None,
                "time_discovered_completed_ns": ns + 4_100_000 if state == "completed" else None,
                "retired": state == "completed",
                "timeout_ms": ctx.spec.timeout_ms,
                "is_p2p": False,
                "frames": [
                    {
                        "name": "all_reduce" if run.op == "ALLREDUCE" else "reduce_scatter_tensor",
                        "filename": f"{PY_SITE}/torch/distributed/distributed_c10d.py",
                        "line": 2501,
                    },
                    {
                        "name": "_reduce_grad",
                        "filename": f"{PY_SITE}/torch/distributed/fsdp/_runtime_utils.py",
                        "line": 1093,
                    },
                ],
            }
        )
    enq, started, done = pg_status
    doc = {
        "version": "2.4",
        "pg_config": {
            "0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(ctx.world)))}
        },
        "pg_status": {
            "0": {
                "last_enqueued_collective": enq,
                "last_started_collective": started,
                "last_completed_collective": done,
            }
        },
        "entries": entries,
    }
    ctx.sink(f"flight_recorder/nccl_trace_rank_{rank}.json").raw = json.dumps(doc, indent=1) + "\n"
