"""job_log: per-rank and combined training logs.

Fixtures are hand-written in the shapes real systems print (PyTorch c10d / ProcessGroupNCCL,
torchrun --tee, srun --label, NCCL debug output, torchelastic's ChildFailedError summary,
slurmstepd); the real excerpts under ../shared/realworld are read in place.
"""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.core.events import Clock, EventKind, Role
from goodput_agent.parsing.base import ParseContext, ParseError
from goodput_agent.parsing.job_log import PARSER, rank_from_filename
from goodput_agent.parsing.job_log.classify import (
    bus_id_to_pci,
    classify_exception,
    exit_code_detail,
    size_to_bytes,
)
from goodput_agent.parsing.job_log.prefixes import LinePrefix, parse_time_text, split_prefix
from goodput_agent.parsing.lines import read_head
from goodput_agent.parsing.timefmt import ClockPolicy

SHARED = (Path(__file__).resolve().parents[3] / ".." / "shared").resolve()
REALWORLD = SHARED / "realworld"
POLICY = ClockPolicy(tz_name="UTC", year=2024)


def parse(tmp_path: Path, text: str, name: str = "job.log", **ctx):
    path = tmp_path / name
    path.write_text(text)
    return PARSER.parse(path, ParseContext(rel_path=f"logs/{name}", clock=POLICY, **ctx))


def kinds(res) -> list[str]:
    return [e.kind.value for e in res.events]


def only(res, kind: EventKind):
    found = [e for e in res.events if e.kind == kind]
    assert len(found) == 1, [(e.kind, e.summary) for e in res.events]
    return found[0]


def realworld(rel: str) -> Path:
    path = REALWORLD / rel
    if not path.exists():
        pytest.skip("../shared/realworld is not available")
    return path


def parse_real(rel: str):
    path = realworld(rel)
    return PARSER.parse(path, ParseContext(rel_path=rel, clock=POLICY))


# --- helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "rank"), [
    ("rank3.log", 3), ("rank-3.out", 3), ("rank_3.txt", 3), ("train.rank3.log", 3),
    ("stdout_rank_012.log", 12), ("nccl_trace_rank_7", 7), ("logs/RANK5.err", 5),
    ("gpu-07.log", None), ("node3.log", None), ("worker-3.log", None),
    ("gpu-07_12345.log", None), ("local_rank3.log", None), ("slurm-123456.out", None),
    ("ranks0-7.log", None), ("3.log", None), ("frank3.log", None),
])
def test_rank_from_filename(name: str, rank: int | None) -> None:
    assert rank_from_filename(name) == rank


@pytest.mark.parametrize(("line", "prefix", "rest"), [
    ("[rank3]:[E1122 10:15:32.1 1 x.cpp:1] msg", LinePrefix(rank=3),
     "[E1122 10:15:32.1 1 x.cpp:1] msg"),
    ("[rank1]: Traceback (most recent call last):", LinePrefix(rank=1),
     " Traceback (most recent call last):"),
    ("[default3]:  File \"x.py\", line 1, in f", LinePrefix(local=3),
     '  File "x.py", line 1, in f'),
    ("  3: hello", LinePrefix(label=3), "hello"),
    ("12: [default2]:[rank26]:boom", LinePrefix(label=12, local=2, rank=26), "boom"),
    ("[1,5]<stderr>:oops", LinePrefix(rank=5), "oops"),
    ("10:15:32 step 3", LinePrefix(), "10:15:32 step 3"),
    ("[80746] [rank0]:x", LinePrefix(rank=0), "x"),
    ("  File \"x.py\", line 1", LinePrefix(), "  File \"x.py\", line 1"),
])
def test_split_prefix(line: str, prefix: LinePrefix, rest: str) -> None:
    assert split_prefix(line) == (prefix, rest)


def test_time_text_forms() -> None:
    assert parse_time_text("2024-05-01 10:00:00,123", POLICY) == (
        datetime(2024, 5, 1, 10, 0, 0, 123000, tzinfo=UTC), Clock.local)
    assert parse_time_text("2024-05-01T10:00:00Z", POLICY)[1] == Clock.absolute
    assert parse_time_text("2024-09-09_09:36:56", POLICY)[0] == datetime(
        2024, 9, 9, 9, 36, 56, tzinfo=UTC)
    # glog with a padded month, and PyTorch's unpadded one ("E321" = March 21)
    assert parse_time_text("E1122 10:15:32.123456", POLICY) == (
        datetime(2024, 11, 22, 10, 15, 32, 123456, tzinfo=UTC), Clock.inferred_year)
    assert parse_time_text("E321 02:07:08.408271257", POLICY)[0] == datetime(
        2024, 3, 21, 2, 7, 8, 408271, tzinfo=UTC)
    assert parse_time_text("E1399 02:07:08", POLICY) is None


def test_sizes_signals_pci() -> None:
    assert size_to_bytes("22.78 GiB") == int(22.78 * 1024**3)
    assert size_to_bytes("128.00 MiB") == 128 * 1024**2
    assert size_to_bytes("512 bytes") == 512
    assert exit_code_detail(-9)["signal_name"] == "SIGKILL"
    assert exit_code_detail(139)["signal_name"] == "SIGSEGV"
    assert exit_code_detail(134)["signal_name"] == "SIGABRT"
    assert "signal" not in exit_code_detail(1)
    assert bus_id_to_pci("9b000") == "0000:9b:00"
    assert bus_id_to_pci("1000") == "0000:01:00"


@pytest.mark.parametrize(("exc_type", "message", "kind", "role", "category"), [
    ("ValueError", "bad shape", EventKind.python_exception, Role.primary, "application_error"),
    ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB.",
     EventKind.cuda_oom, Role.primary, "gpu_oom"),
    ("RuntimeError", "CUDA error: an illegal memory access was encountered",
     EventKind.cuda_error, Role.primary, "application_error"),
    ("RuntimeError", "CUDA error: device-side assert triggered", EventKind.cuda_error,
     Role.primary, "application_error"),
    ("RuntimeError", "CUDA error: uncorrectable ECC error encountered", EventKind.cuda_error,
     Role.primary, "gpu_hardware"),
    ("RuntimeError", "CUDA error: CUDA-capable device(s) is/are busy or unavailable",
     EventKind.cuda_error, Role.primary, "gpu_hardware"),
    ("torch.distributed.DistBackendError", "NCCL communicator was aborted on rank 3.",
     EventKind.python_exception, Role.symptom, None),
    ("RuntimeError", "NCCL error in: x.cpp:1, remote process exited or there was a network error",
     EventKind.python_exception, Role.symptom, None),
    ("ConnectionResetError", "[Errno 104] Connection reset by peer",
     EventKind.python_exception, Role.symptom, None),
    ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError", "",
     EventKind.python_exception, Role.symptom, None),
    ("torch.distributed.elastic.multiprocessing.api.SignalException",
     "Process 1234 got signal: 15", EventKind.python_exception, Role.symptom, None),
    ("KeyboardInterrupt", "", EventKind.python_exception, Role.symptom, None),
    ("RuntimeError", "DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes",
     EventKind.python_exception, Role.primary, "host_oom"),
])
def test_classify_exception(exc_type, message, kind, role, category) -> None:
    v = classify_exception(exc_type, message)
    assert (v.kind, v.role, v.category) == (kind, role, category)


# --- CUDA OOM --------------------------------------------------------------------------------

OOM_NEW_FIXTURE = """\
2024-05-01 10:00:00,100 - INFO - step 100 loss 2.1
Traceback (most recent call last):
  File "/work/train.py", line 88, in <module>
    main()
  File "/work/train.py", line 70, in main
    loss = model(batch).loss
           ^^^^^^^^^^^^
  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1739, in _call
    return forward_call(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total \
capacity of 31.47 GiB of which 12.73 GiB is free. Including non-PyTorch memory, this process has \
18.73 GiB memory in use. Of the allocated memory 9.08 GiB is allocated by PyTorch, and 9.35 GiB \
is reserved by PyTorch but unallocated.
"""


def test_cuda_oom_in_traceback_is_one_event(tmp_path: Path) -> None:
    res = parse(tmp_path, OOM_NEW_FIXTURE, "rank5.log", rank_hint=5)
    assert kinds(res) == ["cuda_oom"]
    e = res.events[0]
    assert (e.role, e.category, e.rank) == (Role.primary, "gpu_oom", 5)
    assert e.detail["tried_bytes"] == int(22.78 * 1024**3)
    assert e.detail["total_bytes"] == int(31.47 * 1024**3)
    assert e.detail["free_bytes"] == int(12.73 * 1024**3)
    assert e.detail["gpu_index"] == 0
    assert e.detail["reserved_unallocated_bytes"] == int(9.35 * 1024**3)
    assert e.detail["exc_type"] == "torch.OutOfMemoryError"
    assert e.detail["innermost_frame"]["function"] == "_call"
    assert e.detail["innermost_user_frame"] == {"file": "/work/train.py", "line": 70,
                                                "function": "main"}
    assert (e.locator.path, e.locator.line_start, e.locator.line_end) == ("logs/rank5.log", 2, 10)
    assert e.excerpt.startswith("torch.OutOfMemoryError: CUDA out of memory.")
    # the exception line has no time: it carries the logging line's
    assert e.ts == datetime(2024, 5, 1, 10, 0, 0, 100000, tzinfo=UTC)
    assert e.clock == Clock.carried


def test_cuda_oom_legacy_wording(tmp_path: Path) -> None:
    res = parse(tmp_path, "RuntimeError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 1; "
                "11.17 GiB total capacity; 10.85 GiB already allocated; 24.81 MiB free; 10.86 GiB "
                "reserved in total by PyTorch)\n")
    e = only(res, EventKind.cuda_oom)
    assert e.detail["tried_bytes"] == 128 * 1024**2
    assert e.detail["gpu_index"] == 1
    assert e.detail["allocated_bytes"] == int(10.85 * 1024**3)
    assert e.detail["reserved_bytes"] == int(10.86 * 1024**3)
    assert e.ts is None and e.clock == Clock.none  # no timestamped line before it


# --- tracebacks ------------------------------------------------------------------------------

INTERLEAVED_FIXTURE = """\
[rank0]:[W501 10:00:00.000001 100 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank 0] warn
[rank1]: Traceback (most recent call last):
[rank0]: Traceback (most recent call last):
[rank1]:   File "/work/train.py", line 10, in <module>
[rank0]:   File "/work/train.py", line 10, in <module>
[rank1]:     main()
[rank0]:     main()
[rank0]:   File "/work/model.py", line 42, in forward
[rank1]:   File "/opt/py/site-packages/torch/distributed/c10d.py", line 2501, in all_reduce
[rank0]:     raise ValueError(f"bad shape {x.shape}")
[rank1]:     work = group.allreduce([tensor], opts)
[rank0]: ValueError: bad shape torch.Size([3, 4])
[rank1]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1.
"""


def test_interleaved_tracebacks_of_two_ranks(tmp_path: Path) -> None:
    res = parse(tmp_path, INTERLEAVED_FIXTURE)
    assert kinds(res) == ["python_exception", "python_exception"]
    by_rank = {e.rank: e for e in res.events}
    r0, r1 = by_rank[0], by_rank[1]
    assert r0.detail["exc_type"] == "ValueError"
    assert r0.detail["message"] == "bad shape torch.Size([3, 4])"
    assert r0.detail["innermost_frame"] == {"file": "/work/model.py", "line": 42,
                                            "function": "forward"}
    assert (r0.role, r0.category) == (Role.primary, "application_error")
    assert (r0.locator.line_start, r0.locator.line_end) == (3, 12)
    assert r1.detail["exc_type"] == "torch.distributed.DistBackendError"
    assert r1.detail["innermost_frame"]["function"] == "all_reduce"
    assert (r1.role, r1.category) == (Role.symptom, None)
    assert (r1.locator.line_start, r1.locator.line_end) == (2, 13)
    # both carry the glog time of line 1 (year from the policy)
    assert r0.ts == datetime(2024, 5, 1, 10, 0, 0, 1, tzinfo=UTC)
    assert r0.clock == Clock.carried


CHAINED_FIXTURE = """\
Traceback (most recent call last):
  File "train.py", line 5, in step
    out = model(x)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \
capacity of 79.15 GiB of which 1.06 GiB is free.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "train.py", line 9, in <module>
    step()
  File "train.py", line 7, in step
    save_crash_dump()
RuntimeError: could not write crash dump
"""


def test_chained_tracebacks_keep_the_first_as_original(tmp_path: Path) -> None:
    res = parse(tmp_path, CHAINED_FIXTURE, "rank0.log", rank_hint=0)
    assert kinds(res) == ["cuda_oom", "python_exception"]
    original, later = res.events
    assert "chained" not in original.detail and original.role == Role.primary
    assert original.detail["tried_bytes"] == 2 * 1024**3
    assert later.detail["chained"] is True
    assert later.detail["exc_type"] == "RuntimeError"
    assert later.role == Role.symptom  # raised while handling the OOM
    assert later.locator.line_start == 8


def test_direct_cause_chain_and_srun_labels(tmp_path: Path) -> None:
    text = """\
  3: Traceback (most recent call last):
  3:   File "data.py", line 3, in load
  3:     raise FileNotFoundError(p)
  3: FileNotFoundError: /data/shard-0001.bin
  3:
  3: The above exception was the direct cause of the following exception:
  3:
  3: Traceback (most recent call last):
  3:   File "train.py", line 20, in <module>
  3:     load()
  3: RuntimeError: failed to load dataset
"""
    res = parse(tmp_path, text)
    assert [e.detail["exc_type"] for e in res.events] == ["FileNotFoundError", "RuntimeError"]
    assert [e.rank for e in res.events] == [3, 3]
    assert res.events[0].role == Role.primary
    assert res.events[1].detail.get("chained") is True


def test_traceback_without_exception_line_is_dropped(tmp_path: Path) -> None:
    text = 'Traceback (most recent call last):\n  File "x.py", line 1, in f\n    f()\n'
    assert parse(tmp_path, text).events == []


# --- carried time ----------------------------------------------------------------------------


def test_carried_time_comes_from_the_latest_timestamped_line(tmp_path: Path) -> None:
    lines = ["2024-05-01 09:00:00,000 WARNING NCCL_ASYNC_ERROR_HANDLING is deprecated"]
    lines += [f"2024-05-01 09:{m:02d}:00,000 INFO step {m}" for m in range(1, 59)]
    lines += ["epoch 3:  35%|####      | 350/1000 [30:01<57:14]"] * 5
    lines += ["Traceback (most recent call last):", '  File "t.py", line 1, in <module>',
              "    main()", "KeyError: 'labels'"]
    res = parse(tmp_path, "\n".join(lines) + "\n", "rank2.log", rank_hint=2)
    e = only(res, EventKind.python_exception)
    assert e.ts == datetime(2024, 5, 1, 9, 58, tzinfo=UTC)  # not 09:00, the last decoded one
    assert e.clock == Clock.carried
    assert res.lines_read == len(lines)


# --- ranks: local ranks, srun labels, NCCL host lines ----------------------------------------


def test_local_rank_offset_from_a_line_with_both_ranks(tmp_path: Path) -> None:
    text = """\
[default3]:[rank11]:[E501 10:00:00.5 9 ProcessGroupNCCL.cpp:616] [Rank 11] Watchdog caught \
collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, \
Timeout(ms)=600000) ran for 600003 milliseconds before timing out.
[default1]:Traceback (most recent call last):
[default1]:  File "train.py", line 2, in <module>
[default1]:KeyError: 'x'
"""
    res = parse(tmp_path, text)
    wd = only(res, EventKind.nccl_watchdog_timeout)
    exc = only(res, EventKind.python_exception)
    assert wd.rank == 11 and wd.detail["local_rank"] == 3
    assert exc.rank == 9 and exc.detail["local_rank"] == 1
    assert res.facts["local_rank_offsets"] == {"None": 8}


def test_local_rank_without_evidence_stays_local(tmp_path: Path) -> None:
    text = ('[default1]:Traceback (most recent call last):\n'
            '[default1]:  File "train.py", line 2, in <module>\n[default1]:KeyError: \'x\'\n')
    e = only(parse(tmp_path, text), EventKind.python_exception)
    assert e.rank is None
    assert e.detail["local_rank"] == 1


NCCL_INIT_FIXTURE = """\
gpu-01:1000:1100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
NCCL version 2.21.5+cuda12.4
gpu-01:1000:1100 [0] NCCL INFO comm 0x55a0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 \
commId 0xabc - Init COMPLETE
gpu-01:1001:1101 [1] NCCL INFO comm 0x55a1 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 2a000 \
commId 0xabc - Init COMPLETE
gpu-02:2000:2100 [0] NCCL INFO comm 0x55b0 rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 \
commId 0xabc - Init COMPLETE
gpu-02:2001:2101 [1] NCCL INFO comm 0x55b1 rank 3 nranks 4 cudaDev 1 nvmlDev 1 busId 9b000 \
commId 0xabc - Init COMPLETE
gpu-02:2001:2101 [1] NCCL INFO comm 0x55c1 rank 1 nranks 2 cudaDev 1 busId 9b000 - Init COMPLETE
gpu-02:2001:2190 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer \
10.0.0.1<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.2
"""


def test_nccl_lines_map_ranks_to_hosts_and_gpus(tmp_path: Path) -> None:
    res = parse(tmp_path, NCCL_INIT_FIXTURE)
    assert res.rank_hosts == {0: "gpu-01", 1: "gpu-01", 2: "gpu-02", 3: "gpu-02"}
    # the 2-rank sub-communicator's "rank 1" is not global rank 1
    assert res.rank_gpus == {0: "0000:18:00", 1: "0000:2a:00", 2: "0000:18:00",
                             3: "0000:9b:00"}
    assert res.facts["world_size"] == 4
    assert res.facts["nccl_version"] == "2.21.5"
    ib = only(res, EventKind.ib_error)
    assert (ib.role, ib.category) == (Role.primary, "network_fault")
    assert (ib.rank, ib.node, ib.gpu) == (3, "gpu-02", "0000:9b:00")  # via pid 2001
    assert ib.detail["peer"] == "10.0.0.1"
    assert ib.detail["status"] == 12 and ib.detail["status_name"] == "IBV_WC_RETRY_EXC_ERR"
    assert ib.detail["vendor_err"] == 129 and ib.detail["direction"] == "Recv"


def _init_lines(ranks: range, prefixed: bool) -> str:
    return "".join(
        (f"[default{i}]:" if prefixed else "")
        + f"gpu-01:{10 + i}:1 [{i}] NCCL INFO comm 0x{i} rank {i} nranks 4 cudaDev {i} "
        f"busId {i + 1}000 - Init COMPLETE\n" for i in ranks)


TB_LOCAL2 = ('[default2]:Traceback (most recent call last):\n'
             '[default2]:  File "t.py", line 1, in <module>\n[default2]:OSError: disk full\n')


def test_single_node_local_ranks_are_global(tmp_path: Path) -> None:
    # a world of 4 whose local ranks 0..3 all print here: one node, local == global
    e = only(parse(tmp_path, _init_lines(range(4), True) + TB_LOCAL2),
             EventKind.python_exception)
    assert (e.rank, e.node, e.gpu) == (2, "gpu-01", "0000:03:00")
    # only local ranks 0 and 2 seen in a world of 4: it may be one of two nodes
    e = only(parse(tmp_path, _init_lines(range(4), False) + "[default0]:x\n" + TB_LOCAL2),
             EventKind.python_exception)
    assert e.rank is None and e.detail["local_rank"] == 2


def test_srun_label_names_a_node_launcher(tmp_path: Path) -> None:
    text = """\
1: [default2]:[rank10]:[E501 10:00:00.1 5 ProcessGroupNCCL.cpp:1] [Rank 10] hello
1: [default2]:Traceback (most recent call last):
1: [default2]:  File "t.py", line 1, in <module>
1: [default2]:ZeroDivisionError: division by zero
1: E0501 10:00:05.000000 77 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] \
failed (exitcode: 1) local_rank: 2 (pid: 4242) of binary: /usr/bin/python3
"""
    res = parse(tmp_path, text)
    exc = only(res, EventKind.python_exception)
    exit_ = only(res, EventKind.exit_status)
    assert exc.rank == 10 and exc.detail["task"] == 1
    assert exit_.rank == 10 and exit_.detail["exitcode"] == 1 and exit_.detail["pid"] == 4242
    assert exit_.ts == datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)
    assert exit_.clock == Clock.inferred_year


# --- NCCL watchdog ---------------------------------------------------------------------------

WATCHDOG_FIXTURE = """\
[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, \
Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
[rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank \
1] Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL \
work: 811, last completed NCCL work: 807.
[rank1]:[E626 06:24:44.906480000 ProcessGroupNCCL.cpp:630] [Rank 1] Some NCCL operations have \
failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations \
might run on corrupted/incomplete data.
[rank1]:[E626 06:24:44.906490000 ProcessGroupNCCL.cpp:636] [Rank 1] To avoid data inconsistency, \
we are taking the entire process down.
[rank1]:[E626 06:24:44.907000000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank \
1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, \
Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
[rank0]:[E626 06:24:45.100000000 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank \
0] Received a dump signal due to a collective timeout from  rank 1 and we will try our best to \
dump the debug info. Last enqueued NCCL work: 808, last completed NCCL work: 807.This is most \
likely caused by incorrect usages of collectives.
[rank2]:[E704 13:48:58.260494728 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank \
2] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring \
enqueued collectives.
[rank3]:[E603 17:48:01.005538748 ProcessGroupNCCL.cpp:2268] [PG ID 3 PG GUID 7 Rank 0]  failure \
detected by watchdog at work sequence id: 2398459 PG status: last enqueued work: 2398578, last \
completed work: 2398458
"""


def test_watchdog_timeout_progress_and_teardown(tmp_path: Path) -> None:
    res = parse(tmp_path, WATCHDOG_FIXTURE)
    wds = [e for e in res.events if e.kind == EventKind.nccl_watchdog_timeout]
    assert len(wds) == 2  # the repeat inside "terminated with exception" is not a new one
    wd, stuck = wds
    assert (wd.role, wd.category, wd.rank) == (Role.symptom, "hang", 1)
    assert wd.detail == {"pg_rank": 1, "seq_num": 808, "op_type": "ALLREDUCE",
                         "numel_in": 9801523, "numel_out": 9801523, "timeout_ms": 600000,
                         "ran_ms": 600020}
    assert wd.ts == datetime(2024, 6, 26, 6, 24, 44, 903881, tzinfo=UTC)
    assert stuck.rank == 2 and stuck.detail["stuck_s"] == 480
    progress = [e for e in res.events if e.kind == EventKind.collective_progress]
    assert [(p.rank, p.role) for p in progress] == [(1, Role.context), (0, Role.context),
                                                    (3, Role.context)]
    assert progress[0].detail["last_enqueued"] == 811
    assert progress[0].detail["last_completed"] == 807
    assert progress[0].detail["work"] == 808
    assert progress[1].detail["timeout_from_rank"] == 1
    assert progress[2].detail["pg"] == 3 and progress[2].detail["last_completed"] == 2398458
    notices = [e for e in res.events if e.kind == EventKind.other]
    assert [n.detail["what"] for n in notices] == ["failed_notice", "abort_notice"]
    assert all(n.role == Role.symptom for n in notices)


def test_old_watchdog_wording_and_a_message_split_over_lines(tmp_path: Path) -> None:
    text = """\
[E ProcessGroupNCCL.cpp:485] [Rank 6] Watchdog caught collective operation timeout: \
WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802246 milliseconds before timing out.
[Rank 0] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000)
  ran for 1800090 milliseconds before timing out.
"""
    old, split = parse(tmp_path, text).events
    assert old.detail["op_type"] == "ALLREDUCE" and "seq_num" not in old.detail
    assert old.detail["ran_ms"] == 1802246
    assert old.rank == 6 and old.detail["rank_from"] == "message"
    assert split.detail["seq_num"] == 41 and split.detail["ran_ms"] == 1800090
    assert (split.locator.line_start, split.locator.line_end) == (2, 4)


# --- NCCL / network errors -------------------------------------------------------------------


def test_nccl_and_socket_errors(tmp_path: Path) -> None:
    text = """\
h1:10:20 [2] NCCL INFO NET/IB: Got completion from peer 10.1.2.3<4000> with \
status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV_RDMA_WITH_IMM(129) vendor_err=129 hca mlx5_3
h1:10:20 [2] NCCL WARN NET/IB: Got completion from peer 10.1.2.3<4000> with \
status=IBV_WC_WR_FLUSH_ERR(5) opcode=IBV_WC_SEND(0) vendor_err=249 hca mlx5_3
h1:10:21 [2] NCCL WARN socketProgressOpt: Call to recv from 10.1.2.9<33759> failed : \
Connection reset by peer
RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with \
NCCL_DEBUG=INFO for details), NCCL version 2.14.3
ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
"""
    res = parse(tmp_path, text)
    assert kinds(res) == ["ib_error", "connection_reset", "nccl_error", "nccl_error"]
    flush = res.events[0]  # INFO lines are not errors, the WARN flush error is a consequence
    assert flush.detail["status"] == 5 and flush.role == Role.symptom
    assert flush.detail["hca"] == "mlx5_3" and flush.node == "h1"
    reset = res.events[1]
    assert (reset.role, reset.category) == (Role.symptom, "network_fault")
    assert reset.detail["peer"] == "10.1.2.9<33759>"
    system, usage = res.events[2:]
    assert system.detail["nccl_code"] == "ncclSystemError" and system.role == Role.symptom
    assert usage.detail["nccl_code"] == "ncclInvalidUsage" and usage.role == Role.primary


@pytest.mark.parametrize("line", [
    # every NCCL since 2.12 names the peer; earlier ones do not
    "kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer "
    "10.0.35.1<49189> with error 12, opcode 5327, len 5327, vendor err 129 (Send)",
    "NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
    "h1:10:20 [2] NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 32698, "
    "vendor err 129",
])
def test_an_ib_completion_error_is_read_with_or_without_its_peer(tmp_path: Path,
                                                                  line: str) -> None:
    [e] = parse(tmp_path, line + "\n").events
    assert (e.kind.value, e.role, e.category) == ("ib_error", Role.primary, "network_fault")
    assert (e.detail["status"], e.detail["status_name"]) == (12, "IBV_WC_RETRY_EXC_ERR")
    assert e.detail["vendor_err"] == 129


def test_cuda_errors_outside_tracebacks(tmp_path: Path) -> None:
    text = """\
[rank4]:[E501 10:00:00.1 9 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 4] \
Process group watchdog thread terminated with exception: CUDA error: an illegal memory access \
was encountered
[rank5]:[E501 10:00:01.1 9 c10/cuda/CUDAException.cpp:43] CUDA error: uncorrectable ECC error \
encountered
"""
    a, b = parse(tmp_path, text).events
    assert (a.kind, a.role, a.category, a.rank) == (EventKind.cuda_error, Role.primary,
                                                    "application_error", 4)
    assert a.detail["cuda_error"] == "an illegal memory access was encountered"
    assert (b.category, b.rank) == ("gpu_hardware", 5)


# --- torchelastic ----------------------------------------------------------------------------

ELASTIC_FIXTURE = """\
W0501 10:00:00.100000 77 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] \
Sending process 3307 closing signal SIGTERM
E0501 10:00:00.900000 77 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] \
failed (exitcode: -9) local_rank: 7 (pid: 3309) of binary: /usr/bin/python
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/lib/python3.10/dist-packages/torch/distributed/api.py", line 264, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-09-09_09:36:57
  host      : f5735d9ffd4f
  rank      : 14 (local_rank: 6)
  exitcode  : -15 (pid: 3308)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 3308
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-09-09_09:36:56
  host      : f5735d9ffd4f
  rank      : 15 (local_rank: 7)
  exitcode  : -9 (pid: 3309)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 3309
============================================================
"""


def test_torchelastic_summary_and_agent_lines(tmp_path: Path) -> None:
    res = parse(tmp_path, ELASTIC_FIXTURE)
    sig = only(res, EventKind.signal)
    assert sig.detail == {"pid": 3307, "signal_name": "SIGTERM", "sender": "torchelastic"}
    exit_ = only(res, EventKind.exit_status)
    assert exit_.detail["signal_name"] == "SIGKILL" and exit_.detail["local_rank"] == 7
    assert exit_.rank == 15  # the summary ties local rank 7 to global rank 15
    agent_exc = only(res, EventKind.python_exception)
    assert agent_exc.role == Role.symptom and agent_exc.detail["exc_type"].endswith(
        "ChildFailedError")
    failures = sorted((e for e in res.events if e.kind == EventKind.elastic_failure),
                      key=lambda e: e.locator.line_start)
    other, root = failures
    assert root.role == Role.symptom
    assert root.rank == 15 and root.node == "f5735d9ffd4f"
    assert root.detail["root_cause"] is True and root.detail["root_rank"] == 15
    assert root.detail["exitcode"] == -9 and root.detail["signal_name"] == "SIGKILL"
    assert root.detail["pid"] == 3309 and root.detail["local_rank"] == 7
    assert root.ts == datetime(2024, 9, 9, 9, 36, 56, tzinfo=UTC)
    assert (root.locator.line_start, root.locator.line_end) == (23, 28)
    assert other.detail["root_cause"] is False and other.rank == 14
    assert "root_rank" not in other.detail
    assert res.rank_hosts == {14: "f5735d9ffd4f", 15: "f5735d9ffd4f"}


def test_torchelastic_root_cause_with_a_traceback(tmp_path: Path) -> None:
    text = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-01_10:00:00
  host      : gpu-07
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 123)
  error_file: /tmp/torchelastic_x/none_y/attempt_0/3/error.json
  traceback : Traceback (most recent call last):
    File "/opt/site-packages/torch/distributed/elastic/errors.py", line 355, in wrapper
      return f(*args, **kwargs)
    File "/work/train.py", line 30, in main
      x = y.cuda()
  RuntimeError: CUDA error: an illegal memory access was encountered

============================================================
"""
    res = parse(tmp_path, text)
    cuda = only(res, EventKind.cuda_error)
    assert (cuda.rank, cuda.node, cuda.role) == (3, "gpu-07", Role.primary)
    assert cuda.detail["via"] == "torchelastic_summary"
    assert cuda.detail["innermost_frame"]["file"] == "/work/train.py"
    assert cuda.ts == datetime(2024, 5, 1, 10, tzinfo=UTC)
    root = only(res, EventKind.elastic_failure)
    assert root.detail["exc_type"] == "RuntimeError"
    assert root.detail["error_file"].endswith("/3/error.json")
    assert root.detail["exitcode"] == 1 and "signal" not in root.detail


def test_torch_1_10_summary_with_unpadded_keys_and_the_error_json_under_msg(tmp_path) -> None:
    # the shape torch 1.9-1.10's elastic/multiprocessing/errors printed (keys not padded, the
    # error file's JSON under "msg:"); hand-written after that format, names made up
    text = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
***************************************
            train.py FAILED
=======================================
Root Cause:
[0]:
  time: 2021-08-26_17:12:07
  rank: 2 (local_rank: 2)
  exitcode: 1 (pid: 8045)
  error_file: /tmp/torchelastic_x/attempt_0/2/error.json
  msg:
    {
      "message": "ValueError: labels missing from batch",
      "extraInfo": {
        "py_callstack": [
          "  File \\"/work/train.py\\", line 7, in <module>\\n    main()\\n"
        ],
        "timestamp": "1629997927"
      }
    }
=======================================
"""
    res = parse(tmp_path, text)
    exc = next(e for e in res.events if e.detail.get("via") == "torchelastic_summary")
    assert (exc.category, exc.rank, exc.role) == ("application_error", 2, Role.primary)
    assert exc.detail["exc_type"] == "ValueError"
    root = only(res, EventKind.elastic_failure)
    assert root.detail["root_rank"] == 2 and root.detail["exitcode"] == 1
    assert root.ts == datetime(2021, 8, 26, 17, 12, 7, tzinfo=UTC)


def test_an_exception_line_without_its_traceback_is_an_event_that_weighs_less(tmp_path) -> None:
    res = parse(tmp_path, "epoch 3 step 120 loss 2.31\n"
                          "ValueError: labels missing from batch 412\n")
    exc = only(res, EventKind.python_exception)
    assert (exc.category, exc.role) == ("application_error", Role.primary)
    assert exc.detail["without_traceback"] is True and exc.detail["weight"] < 0.5


def test_the_exception_line_of_a_traceback_is_one_event_not_two(tmp_path) -> None:
    res = parse(tmp_path, 'Traceback (most recent call last):\n  File "/w/train.py", line 9, '
                          'in main\n    step()\nValueError: labels missing\n')
    exc = only(res, EventKind.python_exception)
    assert "without_traceback" not in exc.detail


def test_pytorchs_exception_wrapper_line_is_not_a_second_cause(tmp_path) -> None:
    res = parse(tmp_path, "RuntimeError: Caught ValueError in DataLoader worker process 0.\n")
    assert not [e for e in res.events if e.role == Role.primary]


# --- Slurm lines in job output ---------------------------------------------------------------


def test_slurm_lines(tmp_path: Path) -> None:
    text = """\
slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes \
may have been killed by the cgroup out-of-memory handler.
srun: error: gpu-03: task 12: Out Of Memory
srun: error: gpu-04: task 20: Exited with exit code 1
srun: error: gpu-04: tasks 21-23: Killed
srun: error: Node failure on gpu-05
slurmstepd: error: *** JOB 3495064 ON gpu-01 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME LIMIT ***
slurmstepd: error: *** JOB 3495065 ON gpu-01 CANCELLED AT 2024-05-02T10:00:00 DUE TO PREEMPTION ***
slurmstepd: error: *** JOB 3495066 ON gpu-01 CANCELLED AT 2024-05-03T10:00:00 DUE TO NODE \
FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***
slurmstepd: error: *** STEP 3495064.0 ON gpu-01 CANCELLED AT 2024-05-01T10:00:01 ***
"""
    res = parse(tmp_path, text)
    assert kinds(res) == ["cgroup_oom", "cgroup_oom", "exit_status", "signal", "node_fail",
                          "time_limit", "preempted", "node_fail", "step_state"]
    step_oom, task_oom, exit_, killed, nodefail, tl, pre, nf2, step = res.events
    assert step_oom.detail["step"] == "3495064.0" and step_oom.category == "host_oom"
    assert (task_oom.role, task_oom.category, task_oom.node, task_oom.rank) == (
        Role.primary, "host_oom", "gpu-03", 12)
    assert exit_.rank == 20 and exit_.detail["exitcode"] == 1 and exit_.role == Role.symptom
    assert killed.rank is None and killed.detail["tasks"] == "21-23"
    assert (nodefail.role, nodefail.category, nodefail.node) == (Role.primary, "node_failure",
                                                                 "gpu-05")
    assert (tl.role, tl.category) == (Role.primary, "time_limit")
    assert tl.ts == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert pre.category == "preempted" and nf2.category == "node_failure"
    assert (step.role, step.category) == (Role.symptom, None)
    assert res.facts["slurm_job_id"] == "3495064"


def test_crashes_and_signals(tmp_path: Path) -> None:
    text = """\
Fatal Python error: Segmentation fault
/var/spool/slurmd/job1/slurm_script: line 12: 4242 Killed                  python train.py
Aborted (core dumped)
torch.distributed.elastic.multiprocessing.api.SignalException: Process 17 got signal: 15
I0501 10:00:00.000000 1 torch/distributed/elastic/agent/server/api.py:1] Received 15 death \
signal, shutting down workers
"""
    res = parse(tmp_path, text)
    assert kinds(res) == ["segfault", "signal", "signal", "signal", "signal"]
    assert (res.events[0].role, res.events[0].category) == (Role.primary, "application_error")
    assert [e.detail["signal_name"] for e in res.events[1:]] == [
        "SIGKILL", "SIGABRT", "SIGTERM", "SIGTERM"]
    # the shell's Killed: a SIGKILL whose usual sender is the OOM killer, a host-memory
    # candidate that says the kernel's own record is missing (issue 24); the rest are symptoms
    killed = res.events[1]
    assert (killed.role, killed.category) == (Role.primary, "host_oom")
    assert killed.detail["kernel_record_missing"] and killed.detail["weight"] <= 0.5
    assert all(e.role == Role.symptom for e in res.events[2:])


# --- sniff -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("head", "name", "expected"), [
    (INTERLEAVED_FIXTURE, "combined.out", True),
    (NCCL_INIT_FIXTURE, "job.out", True),
    (ELASTIC_FIXTURE, "torchrun.log", True),
    ("step 1 loss 2.0\nstep 2 loss 1.9\n", "rank3.log", True),
    # a training run's progress is its output, whatever the file is called (issue 24: a
    # healthy run is read and judged, not left unread)
    ("step 1 loss 2.0\nstep 2 loss 1.9\n", "notes.txt", True),
    ("shopping list\nmilk 2\nbread 1\n", "notes.txt", False),
    ("May 15 23:09:27 h kernel: [  514.68] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off\n"
     "May 15 23:09:28 h kernel: [  515.00] Memory cgroup out of memory: Killed process 1\n",
     "kern.log", False),
    ("[ 7063.247407] NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception\n"
     "[ 7063.263325] ProcessGroupNCCL mention in a kernel log\n", "dmesg.txt", False),
    ('{"message": {"message": "RuntimeError: x"}}', "error.json", False),
    ('[{"JobID": 1}]', "sacct.json", False),
    ("JobID           JobName  Partition      State ExitCode\n"
     "------------ ---------- ---------- ---------- --------\n"
     "123          train.sh   gpu         FAILED      1:0\n", "sacct.txt", False),
    ("\x00\x01\x02binary\x00", "rank0.log", False),
])
def test_sniff(head: str, name: str, expected: bool) -> None:
    assert PARSER.sniff(head, name) is expected


# --- robustness ------------------------------------------------------------------------------


def test_huge_single_line_and_garbage(tmp_path: Path) -> None:
    huge = tmp_path / "huge.log"
    huge.write_bytes(b"x" * (10 * 1024 * 1024) + b" CUDA error: an illegal memory access\n")
    res = PARSER.parse(huge, ParseContext(rel_path="huge.log"))
    assert res.lines_read == 1
    assert all(len(e.excerpt) <= 500 for e in res.events)
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(os.urandom(300_000) + b"\nError\x00\xff Traceback\x00\n" * 50)
    PARSER.parse(garbage, ParseContext(rel_path="garbage.log"))  # must not raise


def test_gzip_and_unreadable(tmp_path: Path) -> None:
    gz = tmp_path / "rank1.log.gz"
    gz.write_bytes(gzip.compress(OOM_NEW_FIXTURE.encode()))
    res = PARSER.parse(gz, ParseContext(rel_path="rank1.log.gz", rank_hint=1))
    assert kinds(res) == ["cuda_oom"] and res.events[0].rank == 1
    with pytest.raises(ParseError):
        PARSER.parse(tmp_path / "missing.log", ParseContext(rel_path="missing.log"))
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ParseError):
        PARSER.parse(bad, ParseContext(rel_path="bad.log.gz"))


def test_events_serialise_to_json(tmp_path: Path) -> None:
    res = parse(tmp_path, WATCHDOG_FIXTURE + ELASTIC_FIXTURE + NCCL_INIT_FIXTURE)
    json.loads(res.model_dump_json())


# --- real excerpts ---------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["B_distributed", "C_oom"])
def test_realworld_folders_parse(folder: str) -> None:
    root = REALWORLD / folder
    if not root.exists():
        pytest.skip("../shared/realworld is not available")
    logs = sorted(root.glob("*.log"))
    assert logs
    for path in logs:
        res = PARSER.parse(path, ParseContext(rel_path=path.name))
        for e in res.events:
            assert e.locator.path == path.name and e.locator.line_start >= 1


@pytest.mark.parametrize(("rel", "tried"), [
    ("C_oom/cads4_torch_oom_fragmentation.log", "22.78 GiB"),
    ("C_oom/pytorch16417_oom_batchsize_fix.log", "22.00 MiB"),
    ("C_oom/unilm137_runtimeerror_oom_legacy.log", "128.00 MiB"),
])
def test_realworld_cuda_oom_sizes(rel: str, tried: str) -> None:
    e = next(e for e in parse_real(rel).events if e.kind == EventKind.cuda_oom)
    assert (e.role, e.category) == (Role.primary, "gpu_oom")
    assert e.detail["tried"] == tried
    assert e.detail["tried_bytes"] == size_to_bytes(tried)


@pytest.mark.parametrize("rel", [
    "B_distributed/accelerate314_timeout_one_rank_reading_200G_file.log",
    "B_distributed/autocast381_postfit_allreduce_timeout_rank0_barrier.log",
])
def test_realworld_watchdog_timeouts(rel: str) -> None:
    res = parse_real(rel)
    wd = only(res, EventKind.nccl_watchdog_timeout)
    assert wd.role == Role.symptom
    assert wd.detail["op_type"] == "ALLREDUCE" and wd.detail["timeout_ms"] == 1800000
    assert not any(e.role == Role.primary for e in res.events)  # the cause is not in the log


@pytest.mark.parametrize("rel", [
    "B_distributed/nccl1405_netib_error12_vendor129_249.log",
    "B_distributed/nccl660_gdr_vm_error4_unhandled_system_error.log",
    "B_distributed/nccl928_netib_error4_vendor81_acs_gdr.log",
])
def test_realworld_ib_errors(rel: str) -> None:
    ib = [e for e in parse_real(rel).events if e.kind == EventKind.ib_error]
    assert ib and all(e.category == "network_fault" for e in ib)
    assert any(e.role == Role.primary for e in ib)


def test_realworld_nccl660_rank_from_init_line() -> None:
    res = parse_real("B_distributed/nccl660_gdr_vm_error4_unhandled_system_error.log")
    assert res.rank_hosts == {1: "vm1"}
    vm1 = next(e for e in res.events if e.kind == EventKind.ib_error and e.node == "vm1")
    assert vm1.rank == 1 and vm1.detail["status_name"] == "IBV_WC_LOC_PROT_ERR"


def test_realworld_connection_reset() -> None:
    res = parse_real("B_distributed/nccl2076_ncclremoteerror_ib_nodes.log")
    resets = [e for e in res.events if e.kind == EventKind.connection_reset]
    assert resets and all(e.role == Role.symptom for e in resets)
    assert any(e.detail["reason"] == "Connection reset by peer" for e in resets)


@pytest.mark.parametrize("rel", [
    "C_oom/hafs101_slurm_oomkill_old_format_exclusive_fix.log",
    "C_oom/nextflow5932_slurmstepd_oom_kill_qe.log",
])
def test_realworld_host_oom(rel: str) -> None:
    oom = [e for e in parse_real(rel).events if e.category == "host_oom"]
    assert oom and all(e.role == Role.primary for e in oom)
    assert any(e.kind == EventKind.cgroup_oom and e.node for e in oom)


def test_every_realworld_file_sniffs_and_parses() -> None:
    if not REALWORLD.exists():
        pytest.skip("../shared/realworld is not available")
    sniffed = set()
    for path in sorted(p for p in REALWORLD.rglob("*") if p.is_file()):
        head = read_head(path).decode("utf-8", errors="replace")
        if PARSER.sniff(head, path.name):
            sniffed.add(path.relative_to(REALWORLD).as_posix())
            PARSER.parse(path, ParseContext(rel_path=path.name))
    # kernel logs, Slurm outputs and JSON belong to other parsers
    assert not any(s.startswith(("A_xid/", "D_slurm/", "slurm-json/")) or s.endswith(".json")
                   for s in sniffed)
    assert {"C_oom/cads4_torch_oom_fragmentation.log",
            "B_distributed/nccl928_netib_error4_vendor81_acs_gdr.log"} <= sniffed


def test_lead_fixes_nccl_cuda_failure_with_code_and_killed_dataloader_worker(tmp_path) -> None:
    from goodput_agent.parsing.base import ParseContext

    p = tmp_path / "rank7.log"
    p.write_text(
        "gpu-09:29787:29787 [7] NCCL INFO Bootstrap : Using ib0:10.0.0.9<0>\n"
        "gpu-09:29787:29787 [7] include/alloc.h:124 NCCL WARN Cuda failure 2 'out of memory'\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 10, in <module>\n'
        "RuntimeError: DataLoader worker (pid 80152) is killed by signal: Killed. \n")
    r = PARSER.parse(p, ParseContext(rel_path="rank7.log", rank_hint=7))
    kinds = {(e.kind.value, e.role.value, e.category) for e in r.events}
    assert ("cuda_oom", "primary", "gpu_oom") in kinds
    # the worker's SIGKILL is a host-memory candidate now (issue 24), its kernel record missing
    assert ("signal", "primary", "host_oom") in kinds
    assert r.facts["host_ips"] == {"gpu-09": ["10.0.0.9"]}


def test_lead_fix_kubectl_timestamps_before_rank_prefixes(tmp_path) -> None:
    from goodput_agent.parsing.base import ParseContext

    p = tmp_path / "worker-14.log"
    p.write_text(
        "2024-06-18T03:29:58.649285563Z [default6]:[rank118]: Traceback (most recent call last):\n"
        '2024-06-18T03:29:58.649325564Z [default6]:[rank118]:   File "t.py", line 3, in f\n'
        "2024-06-18T03:29:58.649405566Z [default6]:[rank118]: torch.cuda.OutOfMemoryError: CUDA "
        "out of memory. Tried to allocate 7.82 GiB.\n")
    r = PARSER.parse(p, ParseContext(rel_path="worker-14.log"))
    oom = [e for e in r.events if e.kind.value == "cuda_oom"]
    assert len(oom) == 1 and oom[0].rank == 118
    assert oom[0].ts is not None and oom[0].ts.microsecond == 649405


def test_lead_fix_one_process_log_takes_its_communicator_rank(tmp_path) -> None:
    from goodput_agent.parsing.base import ParseContext

    p = tmp_path / "slurm-51234_13.out"
    p.write_text(
        "hpc-gpu05:4013:4013 [5] NCCL INFO comm 0x1 rank 13 nranks 16 cudaDev 5 busId 9b000 "
        "- Init COMPLETE\n"
        "Fatal Python error: Segmentation fault\n")
    r = PARSER.parse(p, ParseContext(rel_path=p.name))
    seg = [e for e in r.events if e.kind.value == "segfault"]
    assert seg and (seg[0].rank, seg[0].node) == (13, "hpc-gpu05")


@pytest.mark.parametrize(("wrap", "lines", "category"), [
    ("> {}", ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
              "KeyError: 'labels'"], "application_error"),
    ("trainer-1  | {}", ["./entrypoint.sh: line 28:     7 Killed                  "
                         "/app/bin/server $ARGS"], "host_oom"),
])
def test_a_quoted_or_compose_prefixed_paste_reads_as_the_lines(
        tmp_path: Path, wrap: str, lines: list[str], category: str) -> None:
    # a markdown quote in an issue, docker compose's service column: the lines inside decide
    bare = parse(tmp_path, "".join(f"{ln}\n" for ln in lines), name="bare.log")
    wrapped = parse(tmp_path, "".join(wrap.format(ln) + "\n" for ln in lines))
    assert [e.category for e in bare.events if e.role == Role.primary] == [category]
    assert [e.category for e in wrapped.events if e.role == Role.primary] == [category]


@pytest.mark.parametrize(("line", "kind", "category"), [
    # ggml's "CUDA error: %s" as a user transcribed it, without the space
    ("CUDA error:uncorrectable ECC error encountered", "cuda_error", "gpu_hardware"),
    # the caching allocator's refusal under a memory fraction (c10/cuda)
    ("torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of "
     "memory)", "cuda_oom", "gpu_oom"),
    ("salloc: error: Node failure on worker-1", "node_fail", "node_failure"),
    ("srun: error: Node failure on gpu-7", "node_fail", "node_failure"),
])
def test_more_real_spellings_of_a_decisive_line(tmp_path: Path, line: str, kind: str,
                                                category: str) -> None:
    [e] = [e for e in parse(tmp_path, line + "\n").events if e.role == Role.primary]
    assert (e.kind.value, e.category) == (kind, category)


def test_argparse_refusing_the_command_line_is_the_applications_error(tmp_path: Path) -> None:
    """A launcher passing an argument the script does not take (`--local-rank`, newer
    torch.distributed.launch) ends it with argparse's usage and error lines, exit status 2."""
    text = ("usage: train.py [-h] [--local_rank LOCAL_RANK]\n"
            "train.py: error: unrecognized arguments: --local-rank=1\n"
            "srun: error: gpu-3: task 1: Exited with exit code 2\n")
    argparse = [e for e in parse(tmp_path, text).events if e.detail.get("exc_type") == "argparse"]
    [e] = argparse
    assert (e.role, e.category, e.locator.line_start) == (Role.primary, "application_error", 2)
    assert "--local-rank=1" in e.summary
    # other programs' "X: error:" lines are not argparse's
    assert not [e for e in parse(tmp_path, "slurmstepd: error: x\nmake: error: y\n").events
                if e.detail.get("exc_type") == "argparse"]


def test_a_rank_file_whose_nccl_lines_name_one_host_gives_that_rank_its_host(
        tmp_path: Path) -> None:
    # the rank failed before NCCL printed its Init COMPLETE line (no rank in it to map): the
    # host its NCCL lines name is still the file's, and the file is that rank's
    text = ("gpu-b.lab:2625183:2625192 [2] NCCL WARN Socket creation failed\n"
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
            "unhandled system error, NCCL version 2.20.5\n")
    assert parse(tmp_path, text, "rank10.log", rank_hint=10).rank_hosts == {10: "gpu-b.lab"}
    # a file holding two hosts' lines is no one process's: no rank is given a host from it
    two = text + "gpu-c.lab:2625184:2625193 [3] NCCL WARN Socket creation failed\n"
    assert parse(tmp_path, two, "rank11.log", rank_hint=11).rank_hosts == {}


@pytest.mark.parametrize("stamp", [
    "Sep 23 13:50:09",  # BSD syslog, rsyslog's default
    "2024-09-23T13:50:09+0000",  # journalctl -o short-iso
    "2024-09-23T13:50:09.000000+00:00",  # RFC 3339, rsyslog's high-precision template
])
def test_ranks_output_forwarded_by_syslog_keeps_its_rank_and_takes_the_headers_time(
        tmp_path: Path, stamp: str) -> None:
    # journald/rsyslog put their header before the launcher's prefix (and escape the tab)
    head = f"{stamp} h100-sxm-018 python3[1144714]: [rank44]:#011"
    text = "\n".join(head + ln for ln in (
        "Traceback (most recent call last):",
        '  File "/opt/train/run.py", line 412, in <module>',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 4 has a "
        "total capacity of 79.11 GiB of which 1.20 GiB is free.")) + "\n"
    oom = [e for e in parse(tmp_path, text, "syslog").events if e.category == "gpu_oom"]
    assert [(e.rank, e.ts) for e in oom] == [(44, datetime(2024, 9, 23, 13, 50, 9, tzinfo=UTC))]


@pytest.mark.parametrize("line", [
    "Sep 23 13:50:09 gpu-3 kernel: [812.5] NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off",
    "Sep 23 13:50:09 gpu-3 systemd[1]: Started Session 4 of user root.",
])
def test_a_syslog_line_without_a_launcher_prefix_is_kept_whole(line: str) -> None:
    assert split_prefix(line) == (LinePrefix(), line)
