"""The `args` of kernels, copies and NCCL collectives as Kineto records them."""

from __future__ import annotations

from goodput_agent.evals.kineto.spec import Bucket, Kernel, RankTrace


def _kernel_args(k: Kernel) -> str:
    threads = k.block[0] * k.block[1] * k.block[2]
    return (f'"queued": 0, "device": {{dev}}, "context": 1, "stream": {{stream}}, '
            f'"correlation": {{corr}}, "registers per thread": 128, "shared memory": 49152, '
            f'"blocks per SM": {k.grid[0] / 132:.6g}, "warps per SM": '
            f'{k.grid[0] * threads / 32 / 132:.6g}, "grid": [{k.grid[0]}, {k.grid[1]}, '
            f'{k.grid[2]}], "block": [{k.block[0]}, {k.block[1]}, {k.block[2]}], '
            f'"est. achieved occupancy %": {min(100, int(k.grid[0] * threads / 2048 / 1.32))}')


def _copy_args(nbytes: int, dur_us: float = 1.9) -> str:
    return (f'"device": {{dev}}, "context": 1, "stream": {{stream}}, "correlation": {{corr}}, '
            f'"bytes": {nbytes}, "memory bandwidth (GB/s)": {nbytes / dur_us / 1000:.6g}')


def _pg(rt: RankTrace) -> str:
    ranks = ", ".join(str(r) for r in range(rt.world_size))
    return (f'"Process Group Name": "0", "Process Group Description": "default_pg", '
            f'"Process Group Ranks": "[{ranks}]"')


def _comm_args(rt: RankTrace, b: Bucket) -> str:
    if rt.style == "2.1":
        return ""
    return (f'"In msg nelems": {b.nelems}, "Out msg nelems": {b.nelems}, '
            f'"Group size": {rt.world_size}, "dtype": "Float", "In split size": "[]", '
            f'"Out split size": "[]", "Global rank start": 0, "Global rank stride": 1, '
            f'{_pg(rt)}, "Collective name": "allreduce"')


def _nccl_args(rt: RankTrace, b: Bucket) -> str:
    head = ('"queued": 0, "device": {dev}, "context": 1, "stream": {stream}, "correlation": '
            '{corr}, "registers per thread": 96, "shared memory": 87568, "blocks per SM": '
            '0.181818, "warps per SM": 3.090909, "grid": [24, 1, 1], "block": [544, 1, 1], '
            '"est. achieved occupancy %": 0')
    if rt.style == "2.1":
        return head
    return (head + f', "Collective name": "allreduce", "In msg nelems": {b.nelems}, '
            f'"Out msg nelems": {b.nelems}, "Group size": {rt.world_size}, "dtype": "Float", '
            f'"In split size": "[]", "Out split size": "[]", {_pg(rt)}')
