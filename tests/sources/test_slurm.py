"""The live Slurm source against a real single-host cluster (tests/servers/slurm.py): jobs that
complete, fail, get cancelled or run out of time, a drained node, and the typed errors of an
unknown job, a missing binary and an unreachable controller."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from goodput_agent.parsing.timefmt import ClockPolicy
from goodput_agent.sources.errors import NotFound, NotInstalled, Unreachable
from goodput_agent.sources.slurm import (
    SlurmCLI,
    SlurmJob,
    SlurmOutput,
    SlurmSource,
    classify_failure,
)
from goodput_agent.sources.slurm_job import expand_output_path, job_from_outputs
from tests.servers.debian import free_port
from tests.servers.slurm import SlurmCluster

STEP_EXITS = "#!/bin/bash\necho start\nsrun -N2 bash -c 'exit $((SLURM_NODEID + 2))'\nexit 3\n"


def _source(cluster: SlurmCluster, **kw: object) -> SlurmSource:
    return SlurmSource(SlurmCLI(env=cluster.env, **kw))  # type: ignore[arg-type]


def test_completed_and_failed_jobs_with_steps(slurm_cluster: SlurmCluster) -> None:
    ok = slurm_cluster.submit("#!/bin/bash\necho fine\n", "-w", "gpu-node-01", name="ok")
    bad = slurm_cluster.submit(STEP_EXITS, "-N2", "-w", "gpu-node-[01-02]", name="bad")
    assert slurm_cluster.wait_done(ok) == "COMPLETED"
    assert slurm_cluster.wait_done(bad) == "FAILED"
    src = _source(slurm_cluster)
    good = src.job(ok)
    assert (good.state, good.exit_code, good.nodes) == ("COMPLETED", 0, ["gpu-node-01"])
    assert good.std_out == str(slurm_cluster.output_dir / f"{ok}.out")
    failed = src.job(bad)
    assert (failed.state, failed.exit_code, failed.name) == ("FAILED", 3, "bad")
    assert failed.nodes == ["gpu-node-01", "gpu-node-02"] and failed.batch_host == "gpu-node-01"
    steps = {s.step_id: s for s in failed.steps}
    assert steps[f"{bad}.batch"].state == "FAILED" and steps[f"{bad}.batch"].exit_code == 3
    # srun's step: the highest task exit code (node 1 exits 3, node 0 exits 2)
    assert steps[f"{bad}.0"].exit_code == 3 and steps[f"{bad}.0"].nodes == failed.nodes
    names = [o.name for o in failed.outputs]
    if src.cli.json_ok:  # Slurm 23.02 and later
        assert names == ["scontrol_job.txt", "sacct.json", "nodes.json", "sinfo_R.txt"]
    else:  # Debian bookworm's 22.05: the text forms
        assert names == ["scontrol_job.txt", "sacct.txt", "scontrol_nodes.txt", "sinfo_R.txt"]
        sacct = next(o for o in failed.outputs if o.name == "sacct.txt")
        assert sacct.argv[:3] == ["sacct", "-j", bad] and f"{bad}.0|" in sacct.text
    assert failed.problems == []


def test_cancelled_job(slurm_cluster: SlurmCluster) -> None:
    job = slurm_cluster.submit("#!/bin/bash\nsleep 300\n", name="cancel-me")
    slurm_cluster.wait_state(job, "RUNNING")
    slurm_cluster.run("scancel", job)
    assert slurm_cluster.wait_done(job) == "CANCELLED"
    read = _source(slurm_cluster).job(job)
    assert read.state == "CANCELLED" and read.exit_code == 0 and read.signal == 15


def test_drained_node_and_its_reason(slurm_cluster: SlurmCluster) -> None:
    with slurm_cluster.fresh_nodes():
        job = slurm_cluster.submit("#!/bin/bash\nexit 1\n", "-w", "gpu-node-03", name="on-03")
        slurm_cluster.wait_done(job)
        slurm_cluster.run("scontrol", "update", "nodename=gpu-node-03", "state=drain",
                          "reason=GPU 2 fell off the bus (Xid 79)")
        read = _source(slurm_cluster).job(job)
    node = next(n for n in read.node_states if n.name == "gpu-node-03")
    assert "DRAIN" in node.state and node.reason == "GPU 2 fell off the bus (Xid 79)"
    assert node.reason_time is not None
    sinfo = next(o for o in read.outputs if o.name == "sinfo_R.txt")
    assert re.search(r"GPU 2 fell off the bus \(Xid 79\)\s+root\s+\S+\s+gpu-node-03", sinfo.text)


def test_unknown_job_and_bad_ids(slurm_cluster: SlurmCluster) -> None:
    src = _source(slurm_cluster)
    with pytest.raises(NotFound, match="job 987654: neither scontrol nor sacct knows it"):
        src.job("987654")
    with pytest.raises(NotFound, match="not a Slurm job id"):
        src.job("12; rm -rf /")


def test_missing_binaries(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    env = {**slurm_cluster.env, "PATH": str(tmp_path)}
    with pytest.raises(NotInstalled, match="scontrol: not installed here"):
        SlurmSource(SlurmCLI(env=env)).job("1")


def _dead_controller(cluster: SlurmCluster, tmp_path: Path, accounting_too: bool) -> dict:
    conf = Path(cluster.env["SLURM_CONF"]).read_text()
    conf = re.sub(r"SlurmctldPort=\d+", f"SlurmctldPort={free_port()}", conf)
    conf = re.sub(r"MessageTimeout=\d+", "MessageTimeout=1", conf)  # no retries for 8 s
    if accounting_too:
        conf = re.sub(r"AccountingStoragePort=\d+", f"AccountingStoragePort={free_port()}", conf)
    (tmp_path / "slurm.conf").write_text(conf)
    return {**cluster.env, "SLURM_CONF": str(tmp_path / "slurm.conf")}


def test_unreachable_controller_with_accounting_left(slurm_cluster: SlurmCluster,
                                                     tmp_path: Path) -> None:
    job = slurm_cluster.submit("#!/bin/bash\nexit 4\n", name="x")
    slurm_cluster.wait_done(job)
    env = _dead_controller(slurm_cluster, tmp_path, accounting_too=False)
    read = SlurmSource(SlurmCLI(env=env, timeout_s=20)).job(job)
    assert (read.state, read.exit_code) == ("FAILED", 4)  # from sacct (slurmdbd) alone
    kinds = {p.what: p.kind for p in read.problems}
    assert kinds[f"scontrol show job {job}"] == "unreachable"
    assert kinds["node reasons (sinfo -R)"] == "unreachable"
    errors = {p.what: p.error for p in read.problems}  # asked once, not once per command
    assert errors["node reasons (sinfo -R)"].startswith("sinfo: not asked: scontrol: ")
    assert read.std_out is None  # only scontrol names it on 22.05


def test_everything_unreachable_is_one_typed_error(slurm_cluster: SlurmCluster,
                                                   tmp_path: Path) -> None:
    env = _dead_controller(slurm_cluster, tmp_path, accounting_too=True)
    with pytest.raises(Unreachable, match="Unable to contact slurm controller"):
        SlurmSource(SlurmCLI(env=env, timeout_s=20)).job("1")


@pytest.mark.parametrize("stderr,kind", [
    ("slurm_load_jobs error: Invalid job id specified", "not_found"),
    ("slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
     "unreachable"),
    ("sacct: error: Problem talking to the database: Connection refused", "unreachable"),
    ("slurm_update error: Access/permission denied", "forbidden"),
    # Debian's scontrol 22.05 with no slurm.conf and no DNS SRV record (this machine, no config)
    ("scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
     "scontrol: error: fetch_config: DNS SRV lookup failed\n"
     "scontrol: error: _establish_config_source: failed to fetch config\n"
     "scontrol: fatal: Could not establish a configuration source", "unreachable"),
    ("sbatch: error: Batch job submission failed: Something new", "error"),
])
def test_command_failures_are_typed(stderr: str, kind: str) -> None:
    assert classify_failure(["scontrol", "show", "job", "1"], 1, stderr).kind == kind


def test_output_patterns_expand_as_slurm_does() -> None:
    job = SlurmJob(job_id="4242", name="train", state="FAILED", nodes=["gpu-node-02"])
    assert expand_output_path("/out/%x-%j.%N.log", job) == "/out/train-4242.gpu-node-02.log"
    assert expand_output_path("slurm-%8j.out", job, workdir="/w") == "/w/slurm-00004242.out"
    assert expand_output_path("/a/100%%.txt", job) == "/a/100%.txt"


def test_newer_sacct_json_is_read_by_the_same_path(shared_dir: Path) -> None:
    """Slurm 24.11's slurmdbd JSON (real, from rackslab/Slurm-web's test assets)."""
    text = (shared_dir / "realworld/slurm-json/slurmdb-job-failed.json").read_text()
    out = SlurmOutput(name="sacct.json", what="sacct", argv=["sacct", "--json"], text=text)
    job = job_from_outputs("5966", [out], ClockPolicy())
    assert (job.state, job.exit_code, job.nodes) == ("FAILED", 1, ["cn1"])
    assert [(s.step_id, s.state, s.exit_code) for s in job.steps][0] == \
        ("5966.batch", "FAILED", 1)


def test_time_limit(slurm_cluster: SlurmCluster) -> None:
    """The job submitted when the cluster started (--time=1) ends TIMEOUT ~80 s later."""
    job = slurm_cluster.jobs["timeout"]
    assert slurm_cluster.wait_done(job, timeout=180) == "TIMEOUT"
    read = _source(slurm_cluster).job(job)
    assert read.state == "TIMEOUT" and read.time_limit_s == 60
