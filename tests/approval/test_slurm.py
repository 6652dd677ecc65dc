"""Slurm actions through the gate against a real single-host Slurm (tests/servers/slurm.py:
Debian's slurm-wlm and munge, slurmctld and four slurmd on 127.0.0.1). A drain runs only after
approval and `sinfo -R` shows it; unapproved, expired and argument-changed executions are
refused and the node stays up; a real failed job is requeued with its node excluded and runs
elsewhere. Node states are put back afterwards (the cluster is shared by the session)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from goodput_agent.approval.gate import (
    GateRefused,
    action_status,
    approve_action,
    execute_action,
    preview_action,
)
from goodput_agent.approval.policy import parse_policy
from goodput_agent.sources.slurm import SlurmCLI
from goodput_agent.toolkit import ToolContext
from tests.approval.conftest import make_investigation, policy_text
from tests.approval.identities import person

NODE = "gpu-node-03"
# fails on its first run; a requeued run (SLURM_RESTART_COUNT >= 1) completes
FLAKY = """#!/bin/bash
echo "host $(hostname) node $SLURMD_NODENAME restart ${SLURM_RESTART_COUNT:-0}"
if [ "${SLURM_RESTART_COUNT:-0}" = "0" ]; then
  echo "step 120 loss 2.31"; echo "NVRM: Xid 79, GPU has fallen off the bus" >&2; exit 1
fi
echo "step 240 loss 2.10"; exit 0
"""


@pytest.fixture
def slurm_policy():  # noqa: ANN201 - the partition check runs against the real sinfo
    text = policy_text().replace("max_partition_fraction: 1.0", "max_partition_fraction: 0.5")
    return parse_policy(text, "slurm-test-policy.yaml")


def test_drain_only_after_approval_and_sinfo_shows_it(slurm_cluster, ledger,  # noqa: ANN001
                                                      slurm_policy) -> None:
    ctx = ToolContext(slurm=SlurmCLI(slurm_cluster.env))
    reason = "goodput: Xid 79 on GPU 0 (test)"
    with slurm_cluster.fresh_nodes():
        _, ids = make_investigation(ledger, "gpu_hardware", {
            "slurm_drain_node": {"node": NODE, "reason": reason},
            "slurm_resume_node": {"node": NODE}}, node=NODE)
        aid = ids["slurm_drain_node"]
        p = preview_action(ledger, aid, slurm_policy, ctx)
        assert p.command == f"scontrol update NodeName={NODE} State=DRAIN 'Reason={reason}'"

        def up() -> bool:
            return "DRAIN" not in slurm_cluster.node_state(NODE)

        with pytest.raises(GateRefused, match="no approval"):
            execute_action(ledger, aid, ctx, slurm_policy)
        assert up()
        t0 = datetime.now(UTC)
        approve_action(ledger, aid, person("alice"), slurm_policy, now=t0)
        with pytest.raises(GateRefused, match="expired"):
            execute_action(ledger, aid, ctx, slurm_policy, now=t0 + timedelta(minutes=45))
        with pytest.raises(GateRefused, match="binds arguments"):
            execute_action(ledger, aid, ctx, slurm_policy,
                           args={"node": "gpu-node-02", "reason": reason})
        assert up() and "DRAIN" not in slurm_cluster.node_state("gpu-node-02")

        done = execute_action(ledger, aid, ctx, slurm_policy)
        assert done.ok, done.detail
        sinfo_r = slurm_cluster.run("sinfo", "-R", "-h", "-o", "%E|%N")
        assert f"{reason}|{NODE}" in sinfo_r.splitlines(), sinfo_r
        assert not up()
        with pytest.raises(GateRefused, match="already executed"):
            execute_action(ledger, aid, ctx, slurm_policy)
        assert action_status(ledger, aid) == "executed"
        # and back into service through the gate as well
        rid = ids["slurm_resume_node"]
        approve_action(ledger, rid, person("bob"), slurm_policy)
        assert execute_action(ledger, rid, ctx, slurm_policy).ok
        assert up()


def test_requeue_of_a_failed_job_excludes_its_node(slurm_cluster, ledger,  # noqa: ANN001
                                                   slurm_policy) -> None:
    ctx = ToolContext(slurm=SlurmCLI(slurm_cluster.env))
    with slurm_cluster.fresh_nodes():
        job = slurm_cluster.submit(FLAKY, name="flaky-train")
        assert slurm_cluster.wait_done(job) == "FAILED"
        show = slurm_cluster.run("scontrol", "show", "job", job)
        failed_on = re.search(r"\bNodeList=(\S+)", show).group(1)  # type: ignore[union-attr]
        _, ids = make_investigation(ledger, "gpu_hardware", {
            "bare": {"job": job}, "slurm_requeue_job": {"job": job, "exclude": [failed_on]}},
            node=failed_on, target=f"slurm job {job}")
        with pytest.raises(GateRefused, match="bare is not a mutating tool"):
            approve_action(ledger, ids["bare"], person("alice"), slurm_policy)
        aid = ids["slurm_requeue_job"]
        approve_action(ledger, aid, person("alice"), slurm_policy)
        done = execute_action(ledger, aid, ctx, slurm_policy)
        out = done.detail["output"]
        assert done.ok, out
        assert [r["argv"][:3] for r in out["results"]] == [
            ["scontrol", "requeue", job], ["scontrol", "update", f"JobId={job}"],
            ["scontrol", "update", f"JobId={job}"]]
        assert slurm_cluster.wait_done(job, timeout=90) == "COMPLETED"
        show = slurm_cluster.run("scontrol", "show", "job", job)
        ran_on = re.search(r"\bNodeList=(\S+)", show).group(1)  # type: ignore[union-attr]
        assert ran_on != failed_on and f"ExcNodeList={failed_on}" in show
        assert "Restarts=1" in show


def test_cli_approve_holds_a_pending_job_with_slurm_conf(slurm_cluster, tmp_path) -> None:  # noqa: ANN001
    from click.testing import CliRunner

    from goodput_agent.cli import cli
    from goodput_agent.ledger import Ledger

    job = slurm_cluster.submit("#!/bin/bash\nsleep 1\n", "--begin=now+3600", name="later")
    try:
        ledger, policy = tmp_path / "l.duckdb", tmp_path / "p.yaml"
        policy.write_text(policy_text())
        with Ledger(ledger) as lg:
            _, ids = make_investigation(lg, "time_limit", {"slurm_hold_job": {"job": job}},
                                        node=None)
        conf = slurm_cluster.env["SLURM_CONF"]
        r = CliRunner().invoke(cli, ["approve", str(ids["slurm_hold_job"]), "--yes",
                                     "--slurm-conf", conf, "--ledger", str(ledger),
                                     "--policy", str(policy)], env={"COLUMNS": "200"})
        assert r.exit_code == 0, r.output
        assert f"scontrol hold {job}" in r.output and "-> exit 0" in r.output
        show = slurm_cluster.run("scontrol", "show", "job", job)
        assert "JobState=PENDING" in show and "Priority=0" in show, show
    finally:
        slurm_cluster.run("scancel", job, check=False)


def test_retry_after_an_application_error_needs_the_config_change_then_verifies(
        slurm_cluster, tmp_path) -> None:  # noqa: ANN001
    """The whole loop on the real cluster: a job fails on its config; Goodput investigates the
    collected bundle; a bare requeue is refused; the config change runs, then the requeue;
    `goodput verify --slurm-job` collects the job again and says it recovered."""
    from click.testing import CliRunner

    from goodput_agent.cli import cli
    from goodput_agent.collect.slurm import collect_slurm_job
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger

    conf = tmp_path / "train.env"
    conf.write_text("BATCH=8\n")
    script = f"""#!/bin/bash
source {conf}
echo "batch $BATCH restart ${{SLURM_RESTART_COUNT:-0}}"
echo "step 120 loss 2.31"
if [ "$BATCH" -gt 4 ]; then
  echo 'Traceback (most recent call last):' >&2
  echo '  File "/opt/train/train.py", line 88, in <module>' >&2
  echo '    check_batch(cfg)' >&2
  echo 'ValueError: micro-batch 8 does not divide the global batch 12' >&2
  exit 1
fi
echo "step 240 loss 2.10"
"""
    policy = parse_policy(policy_text(), "p.yaml")
    ctx = ToolContext(slurm=SlurmCLI(slurm_cluster.env))
    job = slurm_cluster.submit(script, name="cfg-train")
    assert slurm_cluster.wait_done(job) == "FAILED"
    collect_slurm_job(job, tmp_path / "before", SlurmCLI(slurm_cluster.env))
    ledger = tmp_path / "l.duckdb"
    with Ledger(ledger) as lg:
        report = investigate_bundle(tmp_path / "before", lg)
        inv = report.investigation_id or ""
        assert report.root_cause.category == "application_error", report.root_cause
        claim = lg.rows("SELECT id FROM claims WHERE investigation_id = ? ORDER BY id",
                        [inv])[0]["id"]
        # the exact forms of the proposals a person completes (the remedy says it in words)
        fix = lg.record_action(inv, "config_change", {
            "path": str(conf), "edits": [{"old": "BATCH=8", "new": "BATCH=4"}]}, True,
            "a micro-batch that divides the global batch", [claim])
        retry = lg.record_action(inv, "slurm_requeue_job", {"job": job}, True,
                                 "rerun with the fixed config", [claim])
        with pytest.raises(GateRefused, match="bare retry after application_error"):
            approve_action(lg, retry, person("alice"), policy)
        approve_action(lg, fix, person("alice"), policy)
        assert execute_action(lg, fix, ctx, policy).ok and "BATCH=4" in conf.read_text()
        approve_action(lg, retry, person("alice"), policy)
        assert execute_action(lg, retry, ctx, policy).ok
    assert slurm_cluster.wait_done(job, timeout=90) == "COMPLETED"
    r = CliRunner().invoke(cli, ["verify", inv, "--slurm-job", job, "--slurm-conf",
                                 slurm_cluster.env["SLURM_CONF"], "--json", "--ledger",
                                 str(ledger)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["verdict"] == "recovered", out
    assert out["numbers"]["state"] == "COMPLETED" and out["numbers"]["after_step"] == 240
    assert len(out["ledger_rows"]) == 2  # one verification row per executed action
