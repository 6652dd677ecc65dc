"""Exact job-script edits for OOM verdicts: unit cases on script text, and the whole chain on the
real test Slurm (tests/servers/slurm.py): a job whose script passes `--batch-size 64` and prints
a CUDA OOM is collected (its batch script with it), investigated into a config_change whose
preview is the diff halving it; `goodput approve` writes it within the policy's paths, and only
then does the retry rule let a retry through: a resubmit of the edited script, not a requeue
(which reruns the script Slurm stored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.analysis.failure.analyze import FailureVerdict
from goodput_agent.analysis.failure.remedy import remedy
from goodput_agent.bundle import scan
from goodput_agent.cli import cli
from goodput_agent.core.events import Event, EventKind, Locator, Role
from goodput_agent.planner.script_edits import (
    gpu_oom_edits,
    host_oom_edits,
    with_script_edits,
)
from tests.approval.conftest import policy_text
from tests.approval.identities import me
from tests.servers.slurm import OOM_SCRIPT, SlurmCluster

SCRIPT = "#!/bin/bash\n#SBATCH -N1\n#SBATCH --mem=32G\nsrun python train.py --batch-size 64 " \
         "--global-batch-size 1024\n"


def _verdict(category: str, kind: EventKind, **detail: object) -> FailureVerdict:
    e = Event(kind=kind, role=Role.primary, category=category, summary="oom", detail=detail,
              excerpt="oom", locator=Locator(path="logs/1.err", line_start=5, line_end=5))
    return FailureVerdict(category=category, summary="oom", confidence=0.9, primary=e,
                          evidence=[e])


def _apply(text: str, edits: list) -> str:  # noqa: ANN001
    for e in edits:
        assert text.count(e.old) == 1
        text = text.replace(e.old, e.new)
    return text


def test_cuda_oom_halves_the_per_gpu_batch_not_the_global_one() -> None:
    v = _verdict("gpu_oom", EventKind.cuda_oom, tried_bytes=2 * 2**30)
    edits, notes = gpu_oom_edits(SCRIPT, v)
    after = _apply(SCRIPT, edits)
    assert "--batch-size 32 --global-batch-size 1024" in after and notes == []
    assert "PYTORCH_CUDA_ALLOC_CONF" not in after  # no fragmentation evidence: no such edit
    assert "logs/1.err:5" in edits[0].why


def test_fragmentation_evidence_adds_expandable_segments_after_the_header() -> None:
    v = _verdict("gpu_oom", EventKind.cuda_oom, tried_bytes=2 * 2**30,
                 reserved_unallocated_bytes=6 * 2**30)
    after = _apply(SCRIPT, gpu_oom_edits(SCRIPT, v)[0])
    assert after.splitlines()[3] == "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    v = _verdict("gpu_oom", EventKind.cuda_oom, tried_bytes=8 * 2**30,
                 reserved_unallocated_bytes=1 * 2**30)  # less than the failed allocation
    assert "PYTORCH" not in _apply(SCRIPT, gpu_oom_edits(SCRIPT, v)[0])


def test_nothing_to_halve_says_why() -> None:
    v = _verdict("gpu_oom", EventKind.cuda_oom)
    assert gpu_oom_edits("#!/bin/bash\nsrun python train.py\n", v)[0] == []
    assert "names no batch size" in gpu_oom_edits("#!/bin/bash\nsrun x\n", v)[1][0]
    assert "already 1" in gpu_oom_edits("#!/bin/bash\nx --micro-batch-size=1\n", v)[1][0]


def test_host_oom_raises_mem_only_for_a_cgroup_kill() -> None:
    edits, _ = host_oom_edits(SCRIPT, _verdict("host_oom", EventKind.cgroup_oom))
    assert "#SBATCH --mem=64G\n" in _apply(SCRIPT, edits)
    for old, new in (("--mem 64000", "--mem 128000"), ("--mem=64Gb", "--mem=128Gb"),
                     ("--mem-per-gpu=80G", "--mem-per-gpu=160G")):
        text = f"#!/bin/bash\n#SBATCH {old} # limit\nsrun x\n"
        edits, _ = host_oom_edits(text, _verdict("host_oom", EventKind.cgroup_oom))
        assert f"#SBATCH {new} # limit\n" in _apply(text, edits)
    edits, notes = host_oom_edits(SCRIPT, _verdict("host_oom", EventKind.host_oom_kill,
                                                   scope="host"))
    assert edits == [] and "not the job's memory limit" in notes[0]
    edits, notes = host_oom_edits("#!/bin/bash\nsrun x\n",
                                  _verdict("host_oom", EventKind.cgroup_oom))
    assert edits == [] and "sets no --mem" in notes[0]


def test_files_only_bundle_with_and_without_the_script(tmp_path: Path) -> None:
    v = _verdict("gpu_oom", EventKind.cuda_oom, tried_bytes=2 * 2**30)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/1.err").write_text("torch.OutOfMemoryError: CUDA out of memory.\n")
    bare = with_script_edits(remedy(v, "slurm", "1"), v, scan(tmp_path), "1")
    assert bare.proposals == []  # advice, saying what an exact edit needs
    assert "no job script in the bundle" in (bare.advice[0].missing or "")
    (tmp_path / "train.sbatch").write_text(SCRIPT)
    exact = with_script_edits(remedy(v, "slurm", "1"), v, scan(tmp_path), "1").proposals[0]
    assert exact.args["path"] == str(tmp_path / "train.sbatch")
    assert exact.args["edits"] == [{"old": "--batch-size 64", "new": "--batch-size 32"}]


BATCH64 = OOM_SCRIPT.replace('echo "[rank0]: step 120', "# python train.py --batch-size 64\n"
                             'echo "[rank0]: step 120')


@pytest.fixture(scope="module")
def oom64_job(slurm_cluster: SlurmCluster) -> str:
    job = slurm_cluster.submit("#!/bin/bash\n#SBATCH --mem=1000M\n" + BATCH64.split("\n", 1)[1],
                               name="oom-batch64")
    assert slurm_cluster.wait_done(job) == "FAILED"
    return job


def _run(*argv: str) -> dict:
    r = CliRunner().invoke(cli, list(argv))
    assert r.exit_code == 0, r.output
    return json.loads(r.output) if "--json" in argv else {}


def test_real_job_oom_to_diff_to_approved_edit_then_resubmit(
        slurm_cluster: SlurmCluster, oom64_job: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
    bundle, ledger = tmp_path / "incident", tmp_path / "l.duckdb"
    pol = tmp_path / "policy.yaml"  # config_change may write inside this bundle only
    pol.write_text(policy_text(config_change=f'{{enabled: true, approvers: [alice, {me()}], '
                                             f'scope: {{paths: ["{bundle}/slurm/*"]}}}}'))
    _run("collect", "--slurm-job", oom64_job, "-o", str(bundle))
    script = bundle / f"slurm/batch_script-{oom64_job}.sh"
    stored = slurm_cluster.run("scontrol", "write", "batch_script", oom64_job, "-")
    assert script.read_text() == stored and "--batch-size 64" in stored
    manifest = json.loads((bundle / "manifest.json").read_text())
    entry = next(f for f in manifest["files"] if f["path"] == script.relative_to(bundle)
                 .as_posix())
    assert "submitted from /" in entry["what"]

    r = CliRunner().invoke(cli, ["investigate", str(bundle), "--ledger", str(ledger), "--json"])
    assert r.exit_code == 0, r.output
    inv = json.loads(r.output)["investigation_id"]
    acts = _run("actions", inv, "--json", "--ledger", str(ledger), "--policy", str(pol))
    change = next(a for a in acts["actions"] if a["tool"] == "config_change")
    assert change["args"]["path"] == str(script)
    assert "-# python train.py --batch-size 64\n+# python train.py --batch-size 32" in \
        change["dry_run"]
    # a bare requeue before the change is refused by the retry rule
    _run("propose", inv, "slurm_requeue_job", "--args", json.dumps({"job": oom64_job}),
         "--why", "retry after the change", "--ledger", str(ledger))
    requeue = max(a["action_id"] for a in _run("actions", inv, "--json", "--ledger",
                                                str(ledger), "--policy", str(pol))["actions"])
    base = ["--ledger", str(ledger), "--policy", str(pol), "--yes"]
    r = CliRunner().invoke(cli, ["approve", str(requeue), *base])
    assert r.exit_code == 2 and "apply a config change first" in r.output
    r = CliRunner().invoke(cli, ["approve", str(change["action_id"]), *base])
    assert r.exit_code == 0, r.output
    assert "--batch-size 32" in script.read_text() and "--batch-size 64" not in \
        script.read_text()
    # a requeue reruns the script Slurm stored at submission: the edit would not run
    r = CliRunner().invoke(cli, ["approve", str(requeue), *base])
    assert r.exit_code == 2 and "resubmit the edited script" in r.output
    assert "Restarts=0" in slurm_cluster.run("scontrol", "show", "job", oom64_job)
    # resubmitting the edited script is the retry the change reaches
    _run("propose", inv, "slurm_resubmit_job", "--args",
         json.dumps({"job": oom64_job, "script": str(script),
                     "chdir": str(tmp_path)}),
         "--why", "run the edited script", "--ledger", str(ledger))
    resubmit = max(a["action_id"] for a in _run("actions", inv, "--json", "--ledger",
                                                 str(ledger), "--policy", str(pol))["actions"])
    r = CliRunner().invoke(cli, ["approve", str(resubmit), *base, "--json"])
    assert r.exit_code == 0, r.output
    new_job = r.output.split('"stdout": "')[1].split("\\n")[0].split(";")[0]
    assert new_job.isdigit() and new_job != oom64_job
    ran = slurm_cluster.run("scontrol", "write", "batch_script", new_job, "-")
    assert "--batch-size 32" in ran and "--batch-size 64" not in ran
    slurm_cluster.wait_done(new_job)
