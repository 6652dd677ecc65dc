"""`collect_slurm_job` against the real test cluster: the bundle's layout, its manifest, and
an investigation of it that finds what the real job's real output shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from goodput_agent.collect.base import MANIFEST_NAME, read_manifest
from goodput_agent.collect.slurm import collect_slurm_job, local_nodes, node_addresses
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import open_ledger
from goodput_agent.sources.errors import NotFound
from goodput_agent.sources.slurm import SlurmCLI, SlurmJob, SlurmOutput
from tests.servers.debian import free_port
from tests.servers.slurm import OOM_SCRIPT, SlurmCluster

SECRET = "hf_abcdefghijklmnopqrstuvwxyz0123"


@pytest.fixture(scope="module")
def oom_job(slurm_cluster: SlurmCluster) -> str:
    script = OOM_SCRIPT.replace("exit 1", f"echo HF_TOKEN={SECRET}\nexit 1")
    job = slurm_cluster.submit(script, "-N2", "-w", "gpu-node-[01-02]", name="llama-oom")
    assert slurm_cluster.wait_done(job) == "FAILED"
    return job


def test_bundle_layout_and_manifest(slurm_cluster: SlurmCluster, oom_job: str,
                                    tmp_path: Path) -> None:
    out = tmp_path / "incident"
    m = collect_slurm_job(oom_job, out, SlurmCLI(env=slurm_cluster.env))
    files = {f.path: f for f in m.files}
    if SlurmCLI(env=slurm_cluster.env).json_ok:
        pytest.skip("this layout check is written for Slurm before 23.02 (the text forms)")
    assert {"slurm/scontrol_job.txt", "slurm/sacct.txt", "slurm/scontrol_nodes.txt",
            "slurm/sinfo_R.txt", f"logs/{oom_job}.out", f"logs/{oom_job}.err"} <= set(files)
    assert files["slurm/sacct.txt"].command.startswith(f"sacct -j {oom_job} -P --format=")
    assert m.target == {"slurm_job": oom_job} and m.window is not None
    # the job's stdout as the job wrote it, with the secret masked
    text = (out / f"logs/{oom_job}.out").read_text()
    assert SECRET not in text and "HF_TOKEN=[REDACTED]" in text and files[
        f"logs/{oom_job}.out"].redacted
    assert (out / f"logs/{oom_job}.err").read_text() == \
        (slurm_cluster.output_dir / f"{oom_job}.err").read_text()
    spec = yaml.safe_load((out / "incident.yaml").read_text())
    assert spec["job"] == oom_job and spec["timezone"] == "UTC"
    # every node of this cluster is this host (NodeAddr 127.0.0.1): its kernel log is ours,
    # written when the window holds kernel lines, else named as missing
    assert local_nodes_of(out) == ["gpu-node-01", "gpu-node-02"]
    for node in ("gpu-node-01", "gpu-node-02"):
        written = [p for p in files if p.startswith(f"nodes/{node}/")]
        missing = [e for e in m.errors if e.what == f"kernel log of {node}"]
        assert len(written) + len(missing) == 1
    assert read_manifest(out / MANIFEST_NAME) == m


def local_nodes_of(bundle: Path) -> list[str]:
    text = (bundle / "slurm/scontrol_nodes.txt").read_text()
    job = SlurmJob(job_id="1", state="FAILED", nodes=re.findall(r"NodeName=(\S+)", text),
                   outputs=[SlurmOutput(name="scontrol_nodes.txt", what="", argv=[],
                                        text=text)])
    return local_nodes(job)


def test_investigating_the_bundle_finds_the_cuda_oom(slurm_cluster: SlurmCluster, oom_job: str,
                                                      tmp_path: Path) -> None:
    out = tmp_path / "incident"
    collect_slurm_job(oom_job, out, SlurmCLI(env=slurm_cluster.env))
    with open_ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(out, ledger)
    assert report.root_cause.category == "gpu_oom"
    assert report.root_cause.rank == 0  # the job's output does not say which node printed it
    assert any(e.source == f"logs/{oom_job}.err" and "CUDA out of memory" in e.excerpt
               for e in report.root_cause.evidence)
    assert report.unread == []


def test_unreachable_controller_gives_a_partial_report(slurm_cluster: SlurmCluster,
                                                       oom_job: str, tmp_path: Path) -> None:
    conf = Path(slurm_cluster.env["SLURM_CONF"]).read_text()
    conf = re.sub(r"SlurmctldPort=\d+", f"SlurmctldPort={free_port()}", conf)
    conf = re.sub(r"MessageTimeout=\d+", "MessageTimeout=1", conf)
    (tmp_path / "slurm.conf").write_text(conf)
    env = {**slurm_cluster.env, "SLURM_CONF": str(tmp_path / "slurm.conf")}
    out = tmp_path / "partial"
    m = collect_slurm_job(oom_job, out, SlurmCLI(env=env))
    assert [f.path for f in m.files] == ["slurm/sacct.txt"]
    missing = {e.what: e.kind for e in m.errors}
    assert missing[f"scontrol show job {oom_job}"] == "unreachable"
    assert missing[f"stdout of job {oom_job}"] == "not_found"
    with open_ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(out, ledger)
    # sacct alone: the job failed, why is not in the bundle; the report says what is missing
    assert report.root_cause.category in ("application_error", "unknown")
    assert any(u.startswith(f"missing evidence: scontrol show job {oom_job} (slurm, "
                            "unreachable: scontrol: ") for u in report.unknowns)
    assert any(u.startswith(f"missing evidence: stdout of job {oom_job} ")
               for u in report.unknowns)
    doc = json.loads(report.to_json())
    assert doc["unknowns"] == report.unknowns


def test_unknown_job_writes_nothing(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        collect_slurm_job("987655", tmp_path / "none", SlurmCLI(env=slurm_cluster.env))
    assert not (tmp_path / "none").exists()


def test_node_addresses_from_newer_json(shared_dir: Path) -> None:
    """`scontrol show node --json` (Slurm 24.11, real: rackslab/Slurm-web's test assets)."""
    text = (shared_dir / "realworld/slurm-json/slurm-nodes.json").read_text()
    job = SlurmJob(job_id="1", state="FAILED", nodes=["cn1", "cn2"],
                   outputs=[SlurmOutput(name="nodes.json", what="", argv=[], text=text)])
    addrs = node_addresses(job)
    assert addrs["cn1"] == ["cn1", "cn1"] and len(addrs) > 2
    assert local_nodes(job) == []  # cn1 and cn2 are other machines
