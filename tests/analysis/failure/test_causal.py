"""A cause sits next to the cascade it starts: decoys added to shipped bundles at test time.

Each test copies the demo bundle or a shipped case into tmp, adds one harmless event (an Xid 13,
a traceback that the job survived) at a time the real failure's cascade rules out, and checks
that the verdict does not move and that the decoy is reported as a pre-existing condition.
"""

import re
import shutil
from pathlib import Path

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.report import Report

CASES = Path(__file__).resolve().parents[3] / "evals" / "cases"
TIME_LIMIT_CASE = CASES / "c08-time-limit-sigterm-collateral"
XID13 = ("{stamp} {node} kernel: NVRM: Xid (PCI:0000:1b:00): 13, pid=4242, name=python, "
         "Graphics Exception: ESR 0x404600=0x80000002")


def copy_bundle(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("expected.json"))
    return dst


def prepend(path: Path, line: str) -> None:
    path.write_text(line + "\n" + path.read_text())


def insert_after(path: Path, pattern: str, lines: list[str]) -> None:
    """Insert lines after the first line that matches the pattern."""
    text = path.read_text().split("\n")
    at = next(i for i, line in enumerate(text) if re.search(pattern, line))
    path.write_text("\n".join(text[:at + 1] + lines + text[at + 1:]))


def open_window_from(bundle: Path, start: str) -> None:
    spec = bundle / "incident.yaml"
    spec.write_text(re.sub(r'start: ".*"', f'start: "{start}"', spec.read_text()))


def investigate(bundle: Path, tmp: Path) -> Report:
    with Ledger(tmp / "ledger.duckdb") as ledger:
        return investigate_bundle(bundle, ledger)


def verdict(report: Report) -> tuple[str, str | None, int | None]:
    rc = report.root_cause
    return rc.category, rc.node, rc.rank


def pre_existing(report: Report, category: str, node: str | None) -> bool:
    return any(a.category == category and a.node == node and "pre-existing" in a.why_not
               for a in report.alternatives)


def test_xid13_six_hours_before_the_cascade_is_a_pre_existing_condition(
        demo_bundle: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(demo_bundle, tmp_path)
    prepend(bundle / "nodes/gpu-node-01/kern.log",
            XID13.format(stamp="May 01 04:02:11", node="gpu-node-01"))
    open_window_from(bundle, "2024-05-01T03:50:00Z")
    report = investigate(bundle, tmp_path)
    assert verdict(report) == ("gpu_hardware", "gpu-node-03", 29)
    assert report.root_cause.confidence >= 0.75
    assert pre_existing(report, "application_error", "gpu-node-01")


def test_xid_on_a_node_that_went_on_completing_steps_did_not_stop_the_job(
        demo_bundle: Path, tmp_path: Path) -> None:
    # four minutes before the real failure, but rank 0 on that node logs two more steps
    bundle = copy_bundle(demo_bundle, tmp_path)
    prepend(bundle / "nodes/gpu-node-01/kern.log",
            XID13.format(stamp="May 01 10:10:11", node="gpu-node-01"))
    report = investigate(bundle, tmp_path)
    assert verdict(report) == ("gpu_hardware", "gpu-node-03", 29)
    assert pre_existing(report, "application_error", "gpu-node-01")


def test_traceback_the_job_survived_on_another_node_is_not_the_cause(
        demo_bundle: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(demo_bundle, tmp_path)
    insert_after(bundle / "nodes/gpu-node-01/train.log", r"10:0[4-9]:\d\d,\d+ INFO .* step ", [
        "[default3]:[rank3]: Traceback (most recent call last):",
        '[default3]:[rank3]:   File "/opt/train/pretrain.py", line 412, in <module>',
        "[default3]:[rank3]: KeyError: 'input_ids'"])
    report = investigate(bundle, tmp_path)
    assert verdict(report) == ("gpu_hardware", "gpu-node-03", 29)
    assert pre_existing(report, "application_error", "gpu-node-01")


def test_xid_before_a_time_limit_does_not_replace_the_schedulers_timeout(tmp_path: Path) -> None:
    for stamp, window in (("Feb 11 08:00:11.000000", None),  # 1.7 h before the limit
                          ("Feb 11 09:20:11.000000", None),  # 24 min before, steps go on
                          ("Feb 11 03:44:11.000000", "2025-02-11T03:30:00Z")):
        where = tmp_path / stamp[7:12].replace(":", "")
        bundle = copy_bundle(TIME_LIMIT_CASE, where)
        prepend(bundle / "nodes/nid00022/kern.log", XID13.format(stamp=stamp, node="nid00022"))
        if window:
            open_window_from(bundle, window)
        report = investigate(bundle, where)
        assert verdict(report) == ("time_limit", None, None), stamp
        assert report.root_cause.confidence >= 0.8


def test_application_error_hours_before_a_time_limit_is_a_pre_existing_condition(
        tmp_path: Path) -> None:
    bundle = copy_bundle(TIME_LIMIT_CASE, tmp_path)
    insert_after(bundle / "logs/train.log", r"07:59:\d\d,\d+ INFO .* step ", [
        " 37: [rank37]: Traceback (most recent call last):",
        ' 37: [rank37]:   File "/opt/train/pretrain.py", line 412, in <module>',
        " 37: [rank37]: KeyError: 'input_ids'"])
    report = investigate(bundle, tmp_path)
    assert verdict(report) == ("time_limit", None, None)
    assert any(a.category == "application_error" and "pre-existing" in a.why_not
               for a in report.alternatives)


def test_a_verdict_the_schedulers_timeout_contradicts_stays_below_half(tmp_path: Path) -> None:
    # a GPU that fell off the bus within a minute of the time limit, too late for any step to
    # show the job going on: it may be first, but the scheduler ended the job as TIMEOUT
    bundle = copy_bundle(TIME_LIMIT_CASE, tmp_path)
    prepend(bundle / "nodes/nid00022/kern.log",
            "Feb 11 09:43:30.000000 nid00022 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=4242, "
            "name=python, GPU has fallen off the bus.")
    report = investigate(bundle, tmp_path)
    assert verdict(report)[:2] == ("gpu_hardware", "nid00022")
    assert report.root_cause.confidence < 0.5
    assert any("TIMEOUT" in u for u in report.unknowns)


def test_an_xid_after_the_collectives_stalled_does_not_replace_the_hang(tmp_path: Path) -> None:
    # the watchdogs date the stuck collective at 02:09:35; an Xid three minutes later on
    # another node cannot have started it, and the ranks' progress names the stuck rank
    node = "aks-ndh100-98754588-vmss000000"
    bundle = copy_bundle(CASES / "c34-hang-k8s-stuck-worker", tmp_path)
    prepend(bundle / "nodes" / node / "kern.log",
            XID13.format(stamp="2024-09-24T02:12:35+0000", node=node))
    report = investigate(bundle, tmp_path)
    assert verdict(report) == ("hang", "aks-ndh100-98754588-vmss000003", 25)
    assert any(a.node == node and "after the collectives had stalled" in a.why_not
               for a in report.alternatives)


def test_after_the_stall_the_stuck_ranks_own_node_tells_why(tmp_path: Path) -> None:
    # an Xid 13 on another node twenty seconds before the real Xid 95, both after the stall:
    # the stuck rank's node has its own fault, and that is the verdict
    bundle = copy_bundle(CASES / "c37-gpu-hardware-xid95-drain", tmp_path)
    prepend(bundle / "nodes/dgx-a100-32/kern.log",
            XID13.format(stamp="Apr 22 03:02:45", node="dgx-a100-32"))
    report = investigate(bundle, tmp_path)
    assert verdict(report) == ("gpu_hardware", "dgx-a100-38", 43)


NODES = ("n1", "n2", "n3", "n4")
WATCHDOG = ("{r}: [E0422 06:58:{s:02d}.5 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=4211, OpType=ALLREDUCE, "
            "NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600027 milliseconds "
            "before timing out.")


def node_lost_bundle(root: Path, job_state: str) -> Path:
    """Job 100 on n1-n4 (two ranks each); n3's kernel log stops at 06:38:51, its ranks print
    nothing more, and the others' watchdogs fire at 06:58 on a collective enqueued at 06:48;
    the scheduler's record of the job says `job_state`."""
    (root / "sched").mkdir(parents=True)
    (root / "slurm").mkdir()
    (root / "logs").mkdir()
    (root / "nodes/n3").mkdir(parents=True)
    (root / "incident.yaml").write_text("job: '100'\ntimezone: UTC\n")
    (root / "sched/sacct.txt").write_text(
        "JobID|JobName|State|ExitCode|DerivedExitCode|NodeList|Start|End|Elapsed\n"
        f"100|train|{job_state}|0:0|0:0|n1,n2,n3,n4|2026-04-22T03:30:29|2026-04-22T07:00:31|"
        "03:30:02\n")
    (root / "slurm/scontrol_node.txt").write_text(
        "NodeName=n3 Arch=x86_64 CoresPerSocket=32\n   State=DOWN+DRAIN+NOT_RESPONDING\n"
        "   Reason=Not responding [slurm@2026-04-22T06:53:51]\n")
    (root / "nodes/n3/dmesg.txt").write_text(
        "Apr 22 03:30:59.000000 n3 kernel: nvidia-peermem: loading out-of-tree module\n"
        "Apr 22 06:38:51.356686 n3 kernel: systemd-journald[812]: Journal started\n")
    lines = [f"{r}: {NODES[r // 2]}:1392{r}:1393{r} [{r % 2}] NCCL INFO comm 0x15 rank {r} "
             f"nranks 8 cudaDev {r % 2} busId 1b000 commId 0xea - Init COMPLETE"
             for r in range(8)]
    lines += [f"0: 2026-04-22 {h:02d}:{m:02d}:31,356 - train - step {k * 50} | loss 2.2"
              for k, (h, m) in enumerate([(3, 48), (4, 48), (5, 48), (6, 20), (6, 48)], 1)]
    lines += [WATCHDOG.format(r=r, s=51 + r % 3) for r in range(8) if NODES[r // 2] != "n3"]
    (root / "logs/train-100.out").write_text("\n".join(lines) + "\n")
    return root


def test_the_schedulers_node_fail_ties_an_early_node_record_to_the_job(tmp_path: Path) -> None:
    # the node's last record came before the stalled collective was enqueued: alone that is
    # doubt (nothing shows it stopped the job); the scheduler ending the job as NODE_FAIL
    # answers it, and only that record does
    tied = investigate(node_lost_bundle(tmp_path / "tied", "NODE_FAIL"), tmp_path)
    assert verdict(tied) == ("node_failure", "n3", None)
    assert tied.root_cause.confidence >= 0.75
    assert not any("long before the failure" in u for u in tied.unknowns)
    loose = investigate(node_lost_bundle(tmp_path / "loose", "FAILED"), tmp_path)
    assert loose.root_cause.confidence <= 0.45
    assert any("long before the failure" in u for u in loose.unknowns)


def _node_fail_only(root: Path, job_state: str, end: str) -> Path:
    """node_lost_bundle with no node record at all: the scheduler's row and the ranks' logs."""
    bundle = node_lost_bundle(root, job_state)
    (bundle / "slurm/scontrol_node.txt").unlink()
    shutil.rmtree(bundle / "nodes")
    sacct = bundle / "sched/sacct.txt"
    sacct.write_text(sacct.read_text().replace("07:00:31", end))
    return bundle


def test_a_node_fail_noticed_after_the_stall_is_placed_where_the_ranks_went_silent(
        tmp_path: Path) -> None:
    # slurmctld declares a node down only after SlurmdTimeout without an answer: its NODE_FAIL
    # (07:00) comes minutes after the collectives stalled (06:48); n3's ranks printed nothing
    # while every other rank timed out waiting, so n3 is the node that left
    report = investigate(_node_fail_only(tmp_path / "late", "NODE_FAIL", "07:00:31"), tmp_path)
    assert verdict(report) == ("node_failure", "n3", None)
    # the class is the scheduler's record; the place rests on silence: never a first-hand level
    assert 0.6 <= report.root_cause.confidence <= 0.75
    assert not any("may be a consequence" in u for u in report.unknowns)
    # without the scheduler's NODE_FAIL the same silence is a hang on n3, not a node failure
    failed = investigate(_node_fail_only(tmp_path / "failed", "FAILED", "07:00:31"), tmp_path)
    assert verdict(failed) == ("hang", "n3", None)


def test_a_node_fail_long_after_the_stall_stays_a_contested_hang(tmp_path: Path) -> None:
    # an hour after the stall the node's loss is no longer the scheduler noticing late: the job
    # had hung first (a hung node rebooted ends the job as NODE_FAIL too)
    report = investigate(_node_fail_only(tmp_path / "hour", "NODE_FAIL", "07:50:31"), tmp_path)
    assert verdict(report) == ("hang", "n3", None)
    assert report.root_cause.confidence <= 0.45
    assert any("may be a consequence" in u for u in report.unknowns)
