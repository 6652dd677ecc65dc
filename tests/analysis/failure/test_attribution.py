"""Which rank failed first: bundles generated at test time (a 128-rank job) and a shipped host-OOM
case with its kill line rewritten, so the answer is the rank the evidence names, not the lowest
rank, the first file or the first rank on the node."""

import re
import shutil
from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.report import Report

CASES = Path(__file__).resolve().parents[3] / "evals" / "cases"
HOST_OOM_CASE = CASES / "c03-host-oom-slurm-memcg"
RANKS_PER_NODE, NODES = 8, 16
AGENT = "torch/distributed/elastic/multiprocessing/api.py"


def investigate(bundle: Path, tmp: Path) -> Report:
    with Ledger(tmp / "ledger.duckdb") as ledger:
        return investigate_bundle(bundle, ledger)


def pid_of(rank: int) -> int:
    return 40000 + rank * 7


def traceback(rank: int, message: str) -> list[str]:
    local = rank % RANKS_PER_NODE
    prefix = f"[default{local}]:[rank{rank}]:"
    return [f"{prefix} Traceback (most recent call last):",
            f'{prefix}   File "/workspace/train.py", line 229, in fit',
            f"{prefix} {message}"]


def agent_exit(rank: int, hhmmss: str) -> str:
    agent_pid = 30000 + rank // RANKS_PER_NODE
    return (f"E0601 {hhmmss}.000000 {agent_pid} {AGENT}:869] failed (exitcode: 1) local_rank: "
            f"{rank % RANKS_PER_NODE} (pid: {pid_of(rank)}) of binary: /usr/bin/python3")


def node_log(node: int, errors: dict[int, tuple[str, str]]) -> str:
    """One node's torchrun output: NCCL init lines (rank, host, pid), rank 0's steps, and the
    tracebacks of the ranks in `errors` (rank -> (exception line, agent's exit time))."""
    host = f"gpu-{node:02d}"
    lines = []
    for local in range(RANKS_PER_NODE):
        rank = node * RANKS_PER_NODE + local
        pid = pid_of(rank)
        lines.append(f"[default{local}]:{host}:{pid}:{pid + 60} [{local}] NCCL INFO comm "
                     f"0x{rank:08x} rank {rank} nranks {RANKS_PER_NODE * NODES} cudaDev {local} "
                     f"busId {local + 1}0000 - Init COMPLETE")
    for minute in range(0, 30, 3):
        lines.append(f"[default0]:2024-06-01 12:{minute:02d}:10,000 INFO trainer.py:206 step "
                     f"{1000 + minute * 10}/90000 | loss 2.1 | 2.7 s/it")
    for rank, (message, when) in sorted(errors.items(), key=lambda kv: kv[1][1]):
        lines += traceback(rank, message)
        lines.append(agent_exit(rank, when))
    return "\n".join(lines) + "\n"


def write_job(root: Path, errors: dict[int, tuple[str, str]]) -> Path:
    (root / "slurm").mkdir(parents=True)
    (root / "incident.yaml").write_text(
        'question: "why did job 7001 fail?"\njob: "7001"\nwindow:\n'
        '  start: "2024-06-01T11:50:00Z"\n  end: "2024-06-01T12:45:00Z"\n')
    (root / "slurm" / "sacct.txt").write_text(
        "JobID|JobName|State|ExitCode|NodeList|Start|End|Elapsed\n"
        f"7001|pretrain|FAILED|1:0|gpu-[00-{NODES - 1:02d}]|2024-06-01T11:59:00|"
        "2024-06-01T12:31:00|00:32:00\n")
    for node in range(NODES):
        mine = {r: v for r, v in errors.items() if r // RANKS_PER_NODE == node}
        folder = root / "nodes" / f"gpu-{node:02d}"
        folder.mkdir(parents=True)
        (folder / "train.log").write_text(node_log(node, mine))
    return root


@pytest.mark.parametrize(("first", "later"), [(101, 2), (2, 101), (127, 64)])
def test_the_first_traceback_on_the_one_clock_wins_in_a_128_rank_job(
        tmp_path: Path, first: int, later: int) -> None:
    # both tracebacks carry no time of their own; their ranks' launchers date the exits
    errors = {first: ("ValueError: shard 1255 has 0 samples", "12:30:01"),
              later: ("ValueError: shard 1255 has 0 samples", "12:30:07")}
    report = investigate(write_job(tmp_path / "job", errors), tmp_path)
    rc = report.root_cause
    assert rc.category == "application_error"
    assert (rc.node, rc.rank) == (f"gpu-{first // RANKS_PER_NODE:02d}", first)


def copy_case(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("expected.json"))
    return dst


def rank_pids(train_log: Path) -> dict[int, int]:
    """rank -> pid from the node's own NCCL init lines ("host:pid:tid [k] ... rank R")."""
    init = re.compile(r":(\d+):\d+ \[\d\] NCCL INFO comm \S+ rank (\d+) ")
    return {int(m[2]): int(m[1]) for m in init.finditer(train_log.read_text())}


def kill_pid(dmesg: Path, old: int, new: int, task: str) -> None:
    text = dmesg.read_text()
    text = text.replace(f"Killed process {old} (python)", f"Killed process {new} ({task})")
    dmesg.write_text(text.replace(f"task=python,pid={old}", f"task={task},pid={new}"))


def test_host_oom_kill_goes_to_the_rank_that_ran_the_killed_pid(tmp_path: Path) -> None:
    node = "dgx-a100-19"
    pids = rank_pids(HOST_OOM_CASE / "nodes" / node / "train.log")
    assert len(pids) == 8
    victim_pid = 79806  # the pid the shipped kill line names
    for rank, pid in sorted(pids.items()):
        bundle = copy_case(HOST_OOM_CASE, tmp_path / str(rank))
        kill_pid(bundle / "nodes" / node / "dmesg.txt", victim_pid, pid, "python")
        report = investigate(bundle, tmp_path / str(rank))
        assert (report.root_cause.category, report.root_cause.node) == ("host_oom", node)
        assert report.root_cause.rank == rank, f"the kill named pid {pid}"


def test_host_oom_kill_of_a_worker_goes_to_the_rank_killed_by_sigkill(tmp_path: Path) -> None:
    # the kernel killed a dataloader worker (a pid no rank reported); torchelastic shows which
    # rank's process died of SIGKILL (exitcode -9) while its seven peers got SIGTERM
    bundle = copy_case(HOST_OOM_CASE, tmp_path)
    kill_pid(bundle / "nodes" / "dgx-a100-19" / "dmesg.txt", 79806, 80123, "pt_data_worker")
    log = (bundle / "nodes" / "dgx-a100-19" / "train.log").read_text()
    sigkilled = re.search(r"rank\s+: (\d+) \(local_rank: \d\)\n\s+exitcode\s+: -9", log)
    assert sigkilled
    report = investigate(bundle, tmp_path)
    assert (report.root_cause.category, report.root_cause.node) == ("host_oom", "dgx-a100-19")
    assert report.root_cause.rank == int(sigkilled[1])


def test_a_node_is_named_as_slurm_spells_it_when_srun_names_it(tmp_path: Path) -> None:
    # NCCL prints the host's own, fully qualified name; srun prints Slurm's node name, the one
    # `scontrol` and `--exclude` take: with no scheduler row listing the job's nodes, srun's
    # spelling is the scheduler's
    fqdn = "a100-35.int.lab.example.net"
    lines = [f"{r}: {fqdn if r < 4 else 'a100-36.int.lab.example.net'}:4410{r}:4420{r} "
             f"[{r % 4}] NCCL INFO comm 0x15 rank {r} nranks 8 cudaDev {r % 4} busId 1b000 "
             "commId 0xea - Init COMPLETE" for r in range(8)]
    lines += ["2: Traceback (most recent call last):",
              '2:   File "/workspace/train.py", line 88, in step',
              "2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 "
              "has a total capacity of 79.10 GiB of which 2.31 GiB is free.",
              "srun: error: a100-35: task 2: Exited with exit code 1"]
    (tmp_path / "b/logs").mkdir(parents=True)
    (tmp_path / "b/logs/slurm-7715896.out").write_text("\n".join(lines) + "\n")
    report = investigate(tmp_path / "b", tmp_path)
    assert (report.root_cause.category, report.root_cause.node, report.root_cause.rank) == \
        ("gpu_oom", "a100-35", 2)
