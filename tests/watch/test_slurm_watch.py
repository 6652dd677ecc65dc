"""`goodput watch --slurm` against the real test cluster (tests/servers/slurm.py): a job that
exits 1, one cancelled (by root: the system), one whose node is set DOWN mid-job (NODE_FAIL,
and the node's own DOWN event), the cluster's time-limit job (TIMEOUT); a job that completes is
no incident. Out of memory: this cluster gathers no job accounting (jobacct_gather/none), so
Slurm never ends a job OUT_OF_MEMORY here; the source's handling of that state is covered on
sacct text (test_slurm_source.py). Groups are off (--group-min 1000) so each job is its own
investigation; grouping has its own tests."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.reader import read_ledger
from tests.servers.slurm import SlurmCluster, cluster_with_a_time_limit_job
from tests.servers.stopped import stopped_mid_write

SLEEPER = "#!/bin/bash\necho started; sleep 300\n"


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A cluster of these tests' own: `goodput watch` reports every job that ends on the
    cluster it watches, so the jobs other tests end on the shared one would change what these
    tests count (the whole suite showed it: an incident missing among other tests' jobs)."""
    with cluster_with_a_time_limit_job(tmp_path_factory.mktemp("watch-slurm")) as cluster:
        yield cluster


def wait_accounted(cluster: SlurmCluster, jobs: list[str], timeout: float = 60) -> None:
    cluster.wait_accounted(jobs, timeout)


def watch_cmd(ledger: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "goodput_agent.cli", "watch", "--slurm", "--ledger",
            str(ledger), "--since", "3h", "--group-min", "1000", "--interval", "1", *args]


def run_watch(cluster: SlurmCluster, ledger: Path, *args: str,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(watch_cmd(ledger, "--once", *args), env=env or cluster.env,
                          capture_output=True, text=True, timeout=600, check=False)


def _runs(ledger: Path) -> list[dict]:
    with read_ledger(ledger) as (lg, _):
        return lg.rows(
            "SELECT t.key, t.subject, t.question, t.state, t.status, r.investigation_id, "
            "c.category, c.investigation_id IS NOT NULL AS concluded FROM watch_triggers t "
            "LEFT JOIN watch_runs r ON r.trigger_key = t.key "
            "LEFT JOIN conclusions c ON c.investigation_id = r.investigation_id")


@pytest.fixture(scope="module")
def ended_jobs(slurm_cluster: SlurmCluster) -> dict[str, str]:
    c = slurm_cluster
    with c.fresh_nodes():
        jobs = {"exit1": c.submit("#!/bin/bash\necho boom >&2; exit 1\n", "-w", "gpu-node-01",
                                  name="exit-one"),
                "ok": c.submit("#!/bin/bash\necho fine\n", "-w", "gpu-node-01", name="ok"),
                "cancelled": c.submit(SLEEPER, "-w", "gpu-node-02", name="cancel-me"),
                "node_down": c.submit(SLEEPER, "-w", "gpu-node-03", "--no-requeue",
                                      name="lose-node")}
        c.wait_state(jobs["cancelled"], "RUNNING")
        c.wait_state(jobs["node_down"], "RUNNING")
        c.run("scancel", jobs["cancelled"])
        c.run("scontrol", "update", "nodename=gpu-node-03", "state=down",
              "reason=watch test: node lost")
        for job in jobs.values():
            c.wait_done(job)
        jobs["timeout"] = c.jobs["timeout"]
        assert c.wait_done(jobs["timeout"], timeout=180) == "TIMEOUT"
        wait_accounted(c, list(jobs.values()))
        yield jobs


def test_each_failed_job_investigated_exactly_once(slurm_cluster: SlurmCluster,
                                                   ended_jobs: dict[str, str],
                                                   tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.duckdb"
    with slurm_cluster.fresh_nodes():
        slurm_cluster.run("scontrol", "update", "nodename=gpu-node-03", "state=down",
                          "reason=watch test: node lost")
        first = run_watch(slurm_cluster, ledger, "--concurrency", "2")
    assert first.returncode == 0, first.stderr
    rows = _runs(ledger)
    jobs = {r["subject"]: r for r in rows if r["question"] == "failure"}
    expected = {"exit1": "FAILED", "cancelled": "CANCELLED", "node_down": "NODE_FAIL",
                "timeout": "TIMEOUT"}
    for role, state in expected.items():
        r = jobs[ended_jobs[role]]
        assert (r["state"], r["status"], r["concluded"]) == (state, "done", True), r
    assert ended_jobs["ok"] not in jobs  # completed: no incident
    assert jobs[ended_jobs["timeout"]]["category"] == "time_limit"
    assert jobs[ended_jobs["node_down"]]["category"] == "node_failure"
    node = [r for r in rows if r["question"] == "node" and r["subject"] == "gpu-node-03"]
    assert len(node) == 1 and node[0]["status"] == "done" and node[0]["concluded"]
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys))  # one run per incident, none twice

    again = run_watch(slurm_cluster, ledger)
    assert again.returncode == 0, again.stderr
    assert {r["investigation_id"] for r in _runs(ledger)} == {r["investigation_id"]
                                                             for r in rows}


def test_status_json(slurm_cluster: SlurmCluster, ended_jobs: dict[str, str],
                     tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.duckdb"
    assert run_watch(slurm_cluster, ledger, "--no-node-events").returncode == 0
    out = subprocess.run([sys.executable, "-m", "goodput_agent.cli", "watch", "status", "--json",
                          "--ledger", str(ledger)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    (slurm,) = status["sources"]
    assert slurm["source"] == "slurm" and slurm["ok"] is True and slurm["lag_s"] >= 0
    assert status["queue"]["done"] >= 4 and status["queue"]["queued"] == 0


def _bad_conf(cluster: SlurmCluster, tmp_path: Path) -> dict[str, str]:
    """The cluster's slurm.conf with its controller and accounting ports pointing nowhere."""
    import re

    conf = Path(cluster.env["SLURM_CONF"]).read_text()
    conf = re.sub(r"^(SlurmctldPort|AccountingStoragePort)=\d+", r"\1=1", conf, flags=re.M)
    path = tmp_path / "slurm.conf"
    path.write_text(conf)
    return {**cluster.env, "SLURM_CONF": str(path)}


def test_outage_is_health_then_it_catches_up(slurm_cluster: SlurmCluster,
                                             tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.duckdb"
    assert run_watch(slurm_cluster, ledger, "--since", "1s").returncode == 0  # a cursor: now
    job = slurm_cluster.submit("#!/bin/bash\nexit 3\n", "-w", "gpu-node-02", name="while-down")
    slurm_cluster.wait_done(job)
    wait_accounted(slurm_cluster, [job])
    down = run_watch(slurm_cluster, ledger, env=_bad_conf(slurm_cluster, tmp_path))
    assert down.returncode == 4 and "Traceback" not in down.stderr
    status = subprocess.run([sys.executable, "-m", "goodput_agent.cli", "watch", "status",
                             "--json", "--ledger", str(ledger)], capture_output=True, text=True,
                            check=False)
    assert status.returncode == 4
    health = json.loads(status.stdout)["sources"][0]
    assert health["ok"] is False and health["consecutive_failures"] == 1
    assert health["last_error"] and health["last_ok_at"]
    back = run_watch(slurm_cluster, ledger)
    assert back.returncode == 0, back.stderr
    assert any(r["subject"] == job and r["status"] == "done" for r in _runs(ledger))


def test_kill_9_mid_queue_then_restart(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """The watch killed inside the write of its third investigation (made to happen: the
    third insert of tool calls stops for good, then SIGKILL), so two are done and one is half
    way, whatever the machine's load; a restart finishes the rest and runs nothing twice."""
    ledger = tmp_path / "ledger.duckdb"
    assert run_watch(slurm_cluster, ledger, "--since", "1s").returncode == 0
    jobs = [slurm_cluster.submit(f"#!/bin/bash\necho part {i} >&2; exit 2\n", "-w",
                                 f"gpu-node-0{1 + i % 2}", name=f"batch-{i}") for i in range(8)]
    for j in jobs:
        slurm_cluster.wait_done(j)
    wait_accounted(slurm_cluster, jobs)
    # one at a time, no storm window: each incident is investigated as soon as it is queued
    stopped_mid_write(tmp_path / "watch.marker", 3, *watch_cmd(ledger, "--concurrency", "1",
                                                               "--group-window", "0")[3:],
                      env=slurm_cluster.env, table="tool_calls")
    rows = _runs(ledger)  # every incident of the cluster: the third insert is the third run
    before = {r["key"]: r["investigation_id"] for r in rows if r["status"] == "done"}
    (half,) = [r for r in rows if r["status"] == "running"]
    assert len(before) == 2 and half["investigation_id"] and not half["concluded"]
    with Ledger(ledger, read_only=True) as lg:
        status = {r["id"]: r["status"] for r in lg.investigations(limit=1000)}
    assert status[half["investigation_id"]] == "interrupted"

    after = run_watch(slurm_cluster, ledger)
    assert after.returncode == 0, after.stderr
    rows = _runs(ledger)
    mine = [r for r in rows if r["subject"] in jobs]
    assert {r["subject"] for r in mine if r["status"] == "done"} == set(jobs), (
        rows, after.stderr[-3000:])
    concluded = [r["key"] for r in mine if r["concluded"]]
    assert sorted(concluded) == sorted(set(concluded)) and len(concluded) == len(jobs)
    for key, inv in before.items():  # what was done before the kill was not run again
        assert [r["investigation_id"] for r in rows if r["key"] == key] == [inv]
    # the run killed half-way stays interrupted; a second run is linked to it and concluded
    runs = [r for r in rows if r["key"] == half["key"]]
    assert len(runs) == 2 and [r["concluded"] for r in runs
                               if r["investigation_id"] == half["investigation_id"]] == [False]
    assert sum(r["concluded"] for r in runs) == 1


def test_sigterm_stops_cleanly(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.duckdb"
    proc = subprocess.Popen(watch_cmd(ledger, "--since", "1s"), env=slurm_cluster.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # a state, not a moment: no load is too slow
        while time.monotonic() < deadline:
            if ledger.exists():
                with read_ledger(ledger) as (lg, _):
                    tables = lg.rows("SELECT table_name FROM information_schema.tables "
                                     "WHERE table_name = 'watch_health'")
                    if tables and lg.rows("SELECT * FROM watch_health"):
                        break
            time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "goodput watch: stopped" in err and "Traceback" not in err
