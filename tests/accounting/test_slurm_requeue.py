"""`goodput account --slurm-job` on the real test cluster: a job that fails twice and is requeued
by Slurm (its exit code is the cluster's RequeueExit), then completes. Its
log prints Megatron-LM's own iteration and checkpoint lines. The accounting's segments add up to
the GPU-hours sacct records for the three runs, and each failure's cause is an investigation of
that run."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.accounting.model import JobAccount
from goodput_agent.accounting.progress import save_match
from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from tests.accounting.test_segments import assert_tiles
from tests.servers.slurm import REQUEUE_EXIT, SlurmCluster, log_tail

# Each run: start-up, four Megatron iterations (training.py training_log, timestamped), a
# checkpoint after the second (checkpointing.py save_checkpoint: untimed print_rank_0 lines),
# then runs 0 and 1 fail (a logged error, then the traceback) and exit with the code Slurm
# requeues. (With `scontrol requeue` from inside the job, a CI run once saw the script outlive
# its requeue: its own exit two minutes later ended the pending job FAILED.)
SCRIPT = r"""#!/bin/bash
n=${SLURM_RESTART_COUNT:-0}
ts() { date -u '+%Y-%m-%d %H:%M:%S'; }
echo "[$(ts)] INFO building GPT model (run $n)"
sleep 2
for i in 1 2 3 4; do
  it=$((n * 100 + i))
  printf ' [%s] iteration %8d/     400 | consumed samples: %12d | elapsed time per iteration (ms): 1002.1 | lm loss: 2.345678E+00 |\n' "$(ts)" $it $((it * 128))
  sleep 1
  if [ $i = 2 ]; then
    printf 'saving checkpoint at iteration %7d to /ckpt/gpt in torch_dist format\n' $it
    sleep 1
    printf '  successfully saved checkpoint from iteration %7d to /ckpt/gpt [ t 1/1, p 1/1 ]\n' $it
  fi
done
if [ "$n" = 0 ]; then
  echo "[$(ts)] ERROR [rank0]: training step failed" >&2
  cat >&2 <<'EOF'
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/train/pretrain_gpt.py", line 88, in <module>
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free.
EOF
elif [ "$n" = 1 ]; then
  echo "[$(ts)] ERROR [rank0]: training step failed" >&2
  echo "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered" >&2
fi
if [ "$n" -lt 2 ]; then
  exit REQUEUE_EXIT
fi
echo "[$(ts)] INFO training done"
""".replace("REQUEUE_EXIT", str(REQUEUE_EXIT))  # noqa: E501


def _run_to_completion(cluster: SlurmCluster, job: str, timeout: float = 240) -> None:
    """A requeued job waits ~2 min (its begin time) before it may run again: release it now."""
    deadline = time.monotonic() + timeout
    while (state := cluster.state(job)) != "COMPLETED":
        if time.monotonic() > deadline:
            shown = cluster.run("scontrol", "show", "job", job, check=False)
            log = log_tail(cluster.root / "log" / "slurmctld.log")
            raise TimeoutError(f"job {job} is {state} after {timeout:g} s:\n{shown}\n{log}")
        if state == "PENDING":
            cluster.run("scontrol", "update", f"jobid={job}", "starttime=now", check=False)
        time.sleep(0.5)


def _sacct_gpu_hours(cluster: SlurmCluster, job: str) -> list[float]:
    out = cluster.run("sacct", "-j", job, "-D", "-P", "-n", "--format=JobID,ElapsedRaw,AllocTRES")
    hours = []
    for row in out.splitlines():
        job_id, elapsed, tres = row.split("|")
        if "." not in job_id:
            gpus = int(re.search(r"gres/gpu=(\d+)", tres).group(1))
            hours.append(int(elapsed) * gpus / 3600)
    return hours


@pytest.fixture
def slurm_env(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
    monkeypatch.setenv("TZ", "UTC")
    return slurm_cluster


def test_requeued_job_account(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    job = slurm_env.submit(SCRIPT, "--requeue", "--open-mode=append", "--gres=gpu:2",
                           "-w", "gpu-node-03", name="requeued")
    _run_to_completion(slurm_env, job)
    ledger_path = tmp_path / "l.duckdb"
    r = CliRunner().invoke(cli, ["account", "--slurm-job", job, "--json", "--ledger",
                                 str(ledger_path), "--svg", str(tmp_path / "a.svg")])
    assert r.exit_code == 0, r.output
    acct = JobAccount.model_validate_json(r.stdout)

    assert [a.state for a in acct.attempts] == ["REQUEUED", "REQUEUED", "COMPLETED"]
    assert [a.gpus for a in acct.attempts] == [2, 2, 2]
    # the segments add up to what sacct recorded, run by run
    recorded = _sacct_gpu_hours(slurm_env, job)
    assert len(recorded) == 3
    for a, hours in zip(acct.attempts, recorded, strict=True):
        assert_tiles(a.segments, a.start, a.end, a.gpus)
        assert sum(s.gpu_hours for s in a.segments) == pytest.approx(hours, rel=1e-9)
        assert [s.kind for s in a.segments].count("checkpointing") == 1
    assert acct.allocated_gpu_hours == pytest.approx(sum(recorded), rel=1e-9)

    # each failure's cause is the investigation of that run, recorded in the ledger
    first, second, last = acct.attempts
    assert first.failure is not None and first.failure.category == "gpu_oom"
    assert second.failure is not None and second.failure.category == "application_error"
    assert last.failure is None
    with Ledger(ledger_path, read_only=True) as ledger:
        targets = {i["id"]: i["target"] for i in ledger.investigations()}
    for i, a in enumerate((first, second)):
        assert targets[a.failure.investigation_id].endswith(f"slurm-job-{job}-attempt-{i}")

    # progress after the checkpoint was lost; the restart is owed to the failure before it
    for a in (first, second):
        lost = next(s for s in a.segments if s.kind == "lost_progress")
        ckpt = next(s for s in a.segments if s.kind == "checkpointing")
        assert lost.start == ckpt.end and lost.failure == a.failure.category
        rel, line_no = ckpt.evidence.rsplit(":", 1)
        [bundle] = (tmp_path / "reports").glob(f"slurm-job-{job}-*/bundle")
        text = (bundle / rel).read_text().splitlines()[int(line_no) - 1]
        assert save_match(text) == ("megatron", "end", 100 * a.index + 2)
    assert second.segments[0].cause == "restart_overhead"
    assert second.segments[0].failure == "gpu_oom"
    by_failure = acct.badput_gpu_hours_by_failure
    assert set(by_failure) == {"gpu_oom", "application_error"}
    assert 0 < acct.effective_training_time_ratio < 1
    assert 0 < acct.goodput_fraction < 1
    assert (tmp_path / "a.svg").read_text().count("<g aria-label=\"attempt ") == 3
