"""The dump script's output -> ranks: which variable names the rank, children of a rank
(data-loader workers) skipped, failures kept per rank and per node. The script itself runs
for real in tests/detect/test_live_slurm.py (srun) and below (sh, on this machine's own
processes)."""

from __future__ import annotations

import subprocess
import sys

from goodput_agent.sources.stack_dumps import NODE_SCRIPT, assemble, pod_script_argv, slurm_argv

OK = '[{"pid": 1, "thread_name": "MainThread", "active": false, "frames": [{"name": "f", ' \
     '"short_filename": "a.py", "line": 1}]}]'


def node(*procs: str, done: bool = True, name: str = "n1") -> str:
    return f"@@node {name}\n" + "\n".join(procs) + ("\n@@done" if done else "")


def proc(pid: int, ppid: int, rank_vars: str, body: str = OK, rc: int = 0) -> str:
    return f"@@proc pid={pid} ppid={ppid} {rank_vars}\n@@dump pid={pid}\n{body}\n@@rc {rc}"


def test_torchrun_workers_by_rank_not_the_agent_nor_their_children() -> None:
    out = assemble({"n1": node(
        proc(10, 1, "RANK= SLURM_PROCID=0"),  # the torchrun agent
        proc(11, 10, "RANK=0 SLURM_PROCID=0"), proc(12, 10, "RANK=1 SLURM_PROCID=0"),
        proc(13, 11, "RANK=0 SLURM_PROCID=0"))})  # a data-loader worker of rank 0
    assert out.rank_pids == {0: 11, 1: 12} and out.rank_nodes == {0: "n1", 1: "n1"}


def test_failures_are_kept_where_they_happened() -> None:
    out = assemble({
        "n1": node(proc(11, 1, "SLURM_PROCID=0", "Error: Permission denied (os error 13)", 1),
                   proc(12, 1, "SLURM_PROCID=1", "not json at all", 0)),
        "n2": "@@node n2\n@@node-error py-spy not found on n2\n",
        "n3": node(proc(13, 1, "SLURM_PROCID=2"), done=False, name="n3")})
    assert out.dumps[0][0].error == "py-spy exit 1: Error: Permission denied (os error 13)"
    assert out.dumps[1][0].error.startswith("unreadable py-spy output")
    assert out.node_errors["n2"] == "py-spy not found on n2"
    assert out.node_errors["n3"].startswith("the dump script did not finish")
    assert "n1" not in out.node_errors


def test_the_commands_quote_nothing_from_the_job() -> None:
    argv = slurm_argv("123", ["gpu-01", "gpu-02"], 3, 0.3)
    assert argv[:3] == ["srun", "--overlap", "--jobid=123"] and argv[-5:-1] == [
        "slurm", "123", "3", "0.3"]
    assert pod_script_argv(1, 0.3)[:3] == ["sh", "-c", NODE_SCRIPT]
    import pytest

    with pytest.raises(ValueError):
        slurm_argv("1; rm -rf /", ["n"], 1, 0.3)


def test_the_script_on_this_machine_finds_a_pods_python_process(tmp_path) -> None:  # noqa: ANN001
    """The real script over this machine's /proc: a Python process with RANK=5 in its
    environment is found and "dumped" (a stand-in py-spy prints a fixed dump: this test is
    about finding the process; real py-spy runs in tests/detect/)."""
    fake = tmp_path / "py-spy"
    fake.write_text(f"#!/bin/sh\necho '{OK}'\n")
    fake.chmod(0o755)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               env={"RANK": "5", "PATH": "/usr/bin:/bin"})
    try:
        p = subprocess.run(["sh", "-c", NODE_SCRIPT, "x", "pod", "-", "1", "0", str(fake)],
                           capture_output=True, text=True, timeout=60, check=False)
        absent = subprocess.run(["sh", "-c", NODE_SCRIPT, "x", "pod", "-", "1", "0",
                                 "no-such-py-spy"], capture_output=True, text=True,
                                timeout=60, check=False)
    finally:
        sleeper.kill()
        sleeper.wait()
    out = assemble({"here": p.stdout})
    assert out.rank_pids[5] == sleeper.pid and out.dumps[5][0].error is None
    gone = assemble({"here": absent.stdout})
    assert not gone.dumps and "py-spy not found" in next(iter(gone.node_errors.values()))
