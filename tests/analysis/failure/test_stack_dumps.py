"""py-spy dumps of every rank of a job that stopped progressing (analysis/failure/stack_dumps.py):
all but one process wait for the collective, in it or in a CUDA synchronize; the one elsewhere
is the hang's culprit, placed by its pid in NCCL's `Init COMPLETE` lines (host:pid:tid [dev]
... rank N). Dumps in py-spy's text form (`py-spy dump --pid P`): `Process P: CMD`, `Python
vX`, then `Thread T (idle|active[+gil]): "Name"` and its frames, innermost first."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

# rank -> (host, pid, the main thread's frames); pid 4100 runs on both nodes: the dump's file
# name tells which host it is from
RANKS = {
    0: ("trn-a1", 4100, [("all_reduce", "torch/distributed/distributed_c10d.py", 2050),
                         ("wrapper", "torch/distributed/c10d_logger.py", 72),
                         ("step", "loop.py", 40)]),
    1: ("trn-a1", 4117, [("synchronize", "torch/cuda/__init__.py", 801),
                         ("step", "loop.py", 44)]),
    2: ("trn-a2", 3977, [("all_reduce", "torch/distributed/distributed_c10d.py", 2050),
                         ("wrapper", "torch/distributed/c10d_logger.py", 72),
                         ("step", "loop.py", 40)]),
    3: ("trn-a2", 4100, [("get", "multiprocessing/queues.py", 103),
                         ("_try_get_data", "torch/utils/data/dataloader.py", 1133),
                         ("__next__", "torch/utils/data/dataloader.py", 631),
                         ("step", "loop.py", 31)]),
}
ODD = 3


def _init_line(rank: int, host: str, pid: int, world: int) -> str:
    return (f"{host}.cluster:{pid}:{pid + 60} [{rank % 2}] NCCL INFO comm 0x5a1{rank} rank "
            f"{rank} nranks {world} cudaDev {rank % 2} nvmlDev {rank % 2} busId "
            f"{'1b' if rank % 2 == 0 else '3d'}000 commId 0x77aa1 - Init COMPLETE\n")


def _dump(host: str, pid: int, frames: list[tuple[str, str, int]]) -> str:
    lines = [f"Process {pid}: /usr/bin/python3 -u loop.py --cfg big.yaml",
             "Python v3.11.8 (/usr/bin/python3.11)", "",
             f"Thread 0x7F{pid:X}00 (idle): \"MainThread\""]
    lines += [f"    {fn} ({file}:{line})" for fn, file, line in frames]
    lines += [f"Thread {pid + 9} (idle): \"Thread-1 (_pin_memory_loop)\"",
              "    select (selectors.py:415)",
              "    _pin_memory_loop (torch/utils/data/_utils/pin_memory.py:53)"]
    return "\n".join(lines) + "\n"


def _bundle(root: Path, ranks: dict[int, tuple[str, int, list]], dumped: set[int]) -> Path:
    bundle = root / "b"
    (bundle / "logs").mkdir(parents=True)
    (bundle / "dumps").mkdir()
    for rank, (host, pid, frames) in ranks.items():
        (bundle / "logs" / f"rank{rank}.log").write_text(
            "loading shards\n" + _init_line(rank, host, pid, len(ranks)) + "step 118 loss 2.31\n")
        if rank in dumped:
            (bundle / "dumps" / f"{host}_{pid}.txt").write_text(_dump(host, pid, frames))
    (bundle / "sacct.txt").write_text(
        "JobID|JobName|NodeList|State|ExitCode|Start|End|Elapsed\n"
        "55120|pretrain|trn-a[1-2]|CANCELLED by 1201|0:15|2026-03-02T08:00:05|"
        "2026-03-02T11:31:40|03:31:35\n")
    return bundle


def _investigate(tmp_path: Path, bundle: Path):
    with Ledger(tmp_path / "l.duckdb") as ledger:
        return investigate_bundle(bundle, ledger).root_cause


def test_the_one_process_outside_the_collective_is_the_hang_on_its_rank_and_node(
        tmp_path: Path) -> None:
    got = _investigate(tmp_path, _bundle(tmp_path, RANKS, set(RANKS)))
    assert (got.category, got.rank, got.node) == ("hang", ODD, "trn-a2")
    assert got.evidence[0].locator == "dumps/trn-a2_4100.txt:5"
    assert "get (multiprocessing/queues.py:103)" in got.summary
    # several processes' dumps agree: above one artifact's ceiling, below a first-hand record
    assert 0.6 < got.confidence <= 0.75


def test_without_the_odd_process_dump_no_one_else_is_blamed(tmp_path: Path) -> None:
    got = _investigate(tmp_path, _bundle(tmp_path, RANKS, set(RANKS) - {ODD}))
    assert (got.rank, got.node) == (None, None)
    assert got.confidence <= 0.5


@pytest.mark.parametrize("second", [0, 2])
def test_two_processes_outside_the_collective_name_no_culprit(tmp_path: Path,
                                                              second: int) -> None:
    ranks = dict(RANKS)
    host, pid, _ = ranks[second]
    ranks[second] = (host, pid, [("acquire", "threading.py", 320), ("log", "metrics.py", 12)])
    got = _investigate(tmp_path, _bundle(tmp_path, ranks, set(ranks)))
    assert (got.rank, got.node) == (None, None)


def test_a_rank_left_undumped_lowers_the_confidence_but_keeps_the_culprit(
        tmp_path: Path) -> None:
    ranks = {**RANKS, 4: ("trn-a2", 4230, RANKS[2][2])}
    got = _investigate(tmp_path, _bundle(tmp_path, ranks, set(RANKS)))
    assert (got.category, got.rank) == ("hang", ODD)
    assert got.confidence <= 0.6 and "rank 4" in got.summary


def test_without_nccl_init_lines_the_dumps_file_name_places_the_node_but_no_rank(
        tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, RANKS, set(RANKS))
    for log in (bundle / "logs").iterdir():
        log.write_text("step 118 loss 2.31\n")
    got = _investigate(tmp_path, bundle)
    assert (got.category, got.rank, got.node) == ("hang", None, "trn-a2")
    assert got.confidence <= 0.6 and "which ranks were dumped is not known" in got.summary


def test_an_odd_process_placed_on_its_node_only_says_so(tmp_path: Path) -> None:
    """Without the odd process's NCCL init line its rank is not known, its dump's file name
    still names its host: the hang is that node's, and the report says what would name the
    rank (not that the collective sequence numbers named no one)."""
    ranks = dict(RANKS)
    host, _, frames = ranks[ODD]
    ranks[ODD] = (host, 5200, frames)  # a pid no other process has
    bundle = _bundle(tmp_path, ranks, set(ranks))
    (bundle / "logs" / f"rank{ODD}.log").write_text("loading shards\nstep 118 loss 2.31\n")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger)
    got = report.root_cause
    assert (got.category, got.node) == ("hang", host)
    assert not any("sequence numbers" in u for u in report.unknowns)
