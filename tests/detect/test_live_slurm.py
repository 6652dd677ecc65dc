"""Real processes, end to end: a real torch.distributed (gloo, CPU) job of 4 ranks on 2 nodes
of the test Slurm cluster (tests/servers/slurm.py), with one rank hung (blocked in its data
step on a file the test controls) and, in another job, one rank slowed (Python work in its
step); `goodput check` and `goodput watch --live` dump every rank's stack with py-spy through
`srun --overlap --jobid` and must name that rank — checked against the pid the rank itself
wrote, not against a number the test expects.

Nothing waits for a moment to be caught: each job writes a file once it is in the state under
test (hung; or past 20 steps), and that state holds until the test ends the job. The silence
a stall needs is read from the job's own output (its last progress line) before checking.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from goodput_agent.ledger.reader import read_ledger
from tests.detect.torch_env import TorchUnavailable, torch_venv
from tests.servers.slurm import SlurmCluster, SlurmUnavailable, running_slurm

JOB = Path(__file__).with_name("gloo_job.py")
MIN_STALL_S = 2.0


@pytest.fixture(scope="module")
def venv() -> Path:
    try:
        return torch_venv()
    except TorchUnavailable as exc:
        pytest.skip(f"torch (CPU) + py-spy environment: {exc}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A cluster of these tests' own: the watch reports every job that ends on it."""
    try:
        ctx = running_slurm(tmp_path_factory.mktemp("live-slurm"))
        c = ctx.__enter__()
    except SlurmUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield c
    finally:
        ctx.__exit__(None, None, None)


def _wait_files(paths: list[Path], job: str, cluster: SlurmCluster, timeout: float = 180) -> None:
    """Until the job has put itself in the state under test (it writes these files)."""
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        state = cluster.state(job)
        if state not in ("PENDING", "RUNNING", "CONFIGURING") or time.monotonic() > deadline:
            err = (cluster.output_dir / f"{job}.err")
            raise AssertionError(f"job {job} is {state}; "
                                 f"{err.read_text()[-800:] if err.exists() else ''}")
        time.sleep(0.2)


def _submit(cluster: SlurmCluster, venv: Path, state: Path, *args: str) -> str:
    state.mkdir()
    script = (f"#!/bin/bash\nsrun {venv}/bin/python {JOB} --state-dir {state} "
              f"--release {state}/release {' '.join(args)}\n")
    return cluster.submit(script, "-N", "2", "--ntasks-per-node=2", name="gloo")


@pytest.fixture(scope="module")
def hung(cluster: SlurmCluster, venv: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[str, Path]]:
    state = tmp_path_factory.mktemp("hung") / "state"
    job = _submit(cluster, venv, state, "--hang-rank", "3", "--hang-at", "30")
    try:
        _wait_files([state / "hung", *(state / f"ready-{r}" for r in range(3))], job, cluster)
        _past_silence(cluster, job)
        yield job, state
    finally:
        (state / "release").write_text("done")
        cluster.run("scancel", job, check=False)


def _past_silence(cluster: SlurmCluster, job: str) -> None:
    """The stall needs its silence: wait until the last progress line is older than it (the
    job is hung, so that line stays the last)."""
    lines = [ln for ln in (cluster.output_dir / f"{job}.out").read_text().splitlines()
             if "iteration" in ln]
    last = datetime.fromisoformat(lines[-1].split()[0]).timestamp()
    while time.time() < last + MIN_STALL_S * 2:
        time.sleep(0.1)


@pytest.fixture(scope="module")
def slowed(cluster: SlurmCluster, venv: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, Path]]:
    state = tmp_path_factory.mktemp("slowed") / "state"
    # the others sleep 5 ms a step, then wait ~0.4 s for rank 2 in all_reduce: in 5 samples a
    # waiting rank is caught in its sleep 3 times with a chance of ~1e-5, rank 2 outside its
    # slow_compute likewise (a majority of the samples places each rank)
    job = _submit(cluster, venv, state, "--slow-rank", "2", "--slow-s", "0.4",
                  "--step-s", "0.005", "--ready-at", "5")
    try:
        _wait_files([state / f"ready-{r}" for r in range(4)], job, cluster)
        yield job, state
    finally:
        cluster.run("scancel", job, check=False)


def _goodput(cluster: SlurmCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "goodput_agent.cli", *args], env=cluster.env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_check_names_the_hung_rank(cluster: SlurmCluster, venv: Path, hung: tuple[str, Path],
                                   tmp_path: Path) -> None:
    job, state = hung
    ledger = tmp_path / "ledger.duckdb"
    out = _goodput(cluster, "check", "--slurm-job", job, "--min-stall", str(MIN_STALL_S),
                   "--py-spy", str(venv / "bin" / "py-spy"), "--ledger", str(ledger), "--json")
    assert out.returncode == 6, out.stderr
    doc = json.loads(out.stdout)
    f = doc["finding"]
    assert f["kind"] == "hang" and f["rank"] == 3, f["summary"]
    culprit = f["stacks"]["culprits"][0]
    assert culprit["state"] == "data_loading" and "load_batch" in culprit["where"]
    assert f["stacks"]["dominant"]["state"] == "collective"
    assert "all_reduce" in f["stacks"]["dominant"]["where"]
    assert f["stacks"]["dumped"] == 4 and not f["stacks"]["failed"]
    # the rank named is the process that wrote "hung": its pid is in the dump's evidence
    pid = (state / "hung").read_text()
    stacks = Path(doc["stacks_dir"])
    assert any(f"@@proc pid={pid} " in p.read_text() and p.stem == f["node"]
               for p in stacks.iterdir())
    report = doc["report"]
    assert report["root_cause"]["category"] == "hang" and report["root_cause"]["rank"] == 3
    assert any("jobs/" in e["locator"] for e in report["root_cause"]["evidence"])
    with read_ledger(ledger) as (lg, _):
        claims = lg.rows("SELECT category, rank, node FROM claims")
    assert claims == [{"category": "hang", "rank": 3, "node": f["node"]}]


def test_check_names_the_slowed_rank(cluster: SlurmCluster, venv: Path,
                                     slowed: tuple[str, Path], tmp_path: Path) -> None:
    job, state = slowed
    out = _goodput(cluster, "check", "--slurm-job", job, "--stacks", "always", "--samples", "5",
                   "--py-spy", str(venv / "bin" / "py-spy"), "--ledger",
                   str(tmp_path / "l.duckdb"), "--json")
    assert out.returncode == 7, out.stderr
    f = json.loads(out.stdout)["finding"]
    assert f["kind"] == "straggler" and f["rank"] == 2 and f["stall"]["state"] == "progressing"
    (culprit,) = f["stacks"]["culprits"]
    assert "slow_compute" in culprit["where"] and culprit["samples"] == 5
    pid = int((state / "ready-2").read_text())
    assert json.loads(out.stdout)["report"]["root_cause"]["rank"] == 2
    assert pid > 0


def test_watch_live_investigates_the_hang_once(cluster: SlurmCluster, venv: Path,
                                               hung: tuple[str, Path], tmp_path: Path) -> None:
    job, _ = hung
    ledger = tmp_path / "ledger.duckdb"
    argv = ["watch", "--slurm", "--live", "--once", "--min-stall", str(MIN_STALL_S),
            "--py-spy", str(venv / "bin" / "py-spy"), "--since", "10m", "--ledger",
            str(ledger), "--no-node-events"]
    first = _goodput(cluster, *argv)
    assert first.returncode == 0, first.stderr
    again = _goodput(cluster, *argv)  # the same hang seen again: the same incident
    assert again.returncode == 0, again.stderr
    with read_ledger(ledger) as (lg, _):
        rows = lg.rows("SELECT t.key, t.status, t.question, c.report_json FROM watch_triggers t "
                       "JOIN conclusions c ON c.investigation_id = t.investigation_id "
                       "WHERE t.question = 'live'")
    assert len(rows) == 1 and rows[0]["status"] == "done", rows
    assert rows[0]["key"].startswith(f"live:slurm:{job}:stall:")
    report = json.loads(rows[0]["report_json"])
    assert report["root_cause"]["category"] == "hang" and report["root_cause"]["rank"] == 3
