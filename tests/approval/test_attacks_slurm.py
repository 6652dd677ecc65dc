"""The attack pass's Slurm reproductions against the real cluster the tests start
(tests/servers/slurm.py): a host list that drained every node under a policy of 2 drains a day
and 30 % of a partition, and a `goodput approve` killed (SIGKILL) after its scontrol ran and
before the result row, then approved again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from goodput_agent.actions.slurm_args import hosts
from goodput_agent.approval import store
from goodput_agent.approval.gate import (
    GateRefused,
    action_status,
    approve_action,
    execute_action,
    preview_action,
)
from goodput_agent.approval.policy import parse_policy
from goodput_agent.approval.reconcile import reconcile_action
from goodput_agent.ledger import Ledger
from goodput_agent.sources.slurm import SlurmCLI
from goodput_agent.toolkit import ToolContext, registry
from tests.approval.conftest import make_investigation, policy_text
from tests.approval.identities import me, person

UNCHECKED = (f'{{enabled: true, approvers: [alice, "group:sre", {me()}], '
             'preconditions: {claim_names_target: false}}')


def _policy(fraction: float, per_day: int):  # noqa: ANN202
    text = policy_text(slurm_drain_node=UNCHECKED).replace(
        "max_nodes_drained_per_day: 2", f"max_nodes_drained_per_day: {per_day}").replace(
        "max_partition_fraction: 1.0", f"max_partition_fraction: {fraction}")
    return parse_policy(text, "attack-policy.yaml")


def _drain(ledger: Ledger, node: str) -> int:
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "slurm_drain_node": {"node": node, "reason": "goodput: approve and drain every node"}},
        node="gpu-node-01")
    return ids["slurm_drain_node"]


def test_a_host_list_cannot_drain_past_the_limits(slurm_cluster, ledger) -> None:  # noqa: ANN001
    ctx = ToolContext(slurm=SlurmCLI(slurm_cluster.env))
    policy = _policy(0.3, 2)
    with slurm_cluster.fresh_nodes():
        aid = _drain(ledger, "gpu-node-[01-04]")
        approve_action(ledger, aid, person("alice"), policy)
        with pytest.raises(GateRefused) as refused:
            execute_action(ledger, aid, ctx, policy)
        assert "blast radius: 4 nodes" in refused.value.reason
        assert "100% of partition gpu would be out of service" in refused.value.reason
        assert all("DRAIN" not in slurm_cluster.node_state(n) for n in slurm_cluster.nodes)


def test_a_host_the_cluster_does_not_know_is_refused(slurm_cluster, ledger) -> None:  # noqa: ANN001
    ctx = ToolContext(slurm=SlurmCLI(slurm_cluster.env))
    policy = _policy(1.0, 10)
    with slurm_cluster.fresh_nodes():
        aid = _drain(ledger, "gpu-node-01,ghost-[01-02]")
        approve_action(ledger, aid, person("alice"), policy)
        with pytest.raises(GateRefused, match="ghost-01, ghost-02: not a node of any partition"):
            execute_action(ledger, aid, ctx, policy)
        assert "DRAIN" not in slurm_cluster.node_state("gpu-node-01")


@pytest.mark.parametrize("expr", ["gpu-node-[01-04]", "gpu-node-[01,03]", "a[1-3]-b[01-02]",
                                  "gpu-node-01,gpu-node-[03-04]", "n[008-011]"])
def test_our_expansion_is_slurms(slurm_cluster, expr: str) -> None:  # noqa: ANN001
    assert slurm_cluster.run("scontrol", "show", "hostnames", expr).split() == hosts(expr)


def test_a_host_list_within_the_limits_drains_each_host(slurm_cluster, ledger) -> None:  # noqa: ANN001
    ctx = ToolContext(slurm=SlurmCLI(slurm_cluster.env))
    policy = _policy(0.5, 2)
    with slurm_cluster.fresh_nodes():
        aid = _drain(ledger, "gpu-node-[01-02]")
        assert "NodeName=gpu-node-01,gpu-node-02 " in preview_action(ledger, aid, policy,
                                                                      ctx).command
        approve_action(ledger, aid, person("alice"), policy)
        assert execute_action(ledger, aid, ctx, policy).ok
        assert all("DRAIN" in slurm_cluster.node_state(n) for n in ("gpu-node-01",
                                                                     "gpu-node-02"))


BLOCKING_SCONTROL = """#!/bin/bash
# the real scontrol, then (for the drain) never return: `goodput approve` is killed here
"{real}" "$@"; rc=$?
if [ "$1" = update ]; then touch "{mark}"; exec sleep 600; fi
exit $rc
"""


def _wait_for(mark: Path, proc: subprocess.Popen) -> None:
    """Until the wrapper says the drain ran (it then blocks for good): a state, not a moment."""
    for _ in range(600):
        if mark.exists():
            return
        try:
            proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            continue
        err = (mark.parent / "approve.err").read_text()[-2000:]
        raise AssertionError(f"goodput approve exited {proc.returncode} before its scontrol "
                             f"ran: {err}")
    raise AssertionError("the drain's scontrol never ran")


def test_approve_killed_mid_execution_is_reconciled_never_rerun(slurm_cluster,  # noqa: ANN001
                                                                 tmp_path: Path) -> None:
    ledger_path, policy_path = tmp_path / "l.duckdb", tmp_path / "p.yaml"
    policy_path.write_text(policy_text(slurm_drain_node=UNCHECKED).replace(
        "max_nodes_drained_per_day: 2", "max_nodes_drained_per_day: 1"))
    policy = parse_policy(policy_path.read_text(), str(policy_path))
    wrappers, mark = tmp_path / "bin", tmp_path / "scontrol-ran"
    wrappers.mkdir()
    (wrappers / "scontrol").write_text(BLOCKING_SCONTROL.format(
        real=shutil.which("scontrol"), mark=mark))
    (wrappers / "scontrol").chmod(0o755)
    with slurm_cluster.fresh_nodes():
        with Ledger(ledger_path) as lg:
            aid = _drain(lg, "gpu-node-01")
            other = _drain(lg, "gpu-node-02")
        env = {**slurm_cluster.env, "PATH": f"{wrappers}:{os.environ['PATH']}"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "goodput_agent.cli", "approve", str(aid), "--yes",
             "--ledger", str(ledger_path), "--policy", str(policy_path)],
            env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "approve.err").open("w"),
            start_new_session=True)
        try:
            _wait_for(mark, proc)  # the drain ran; the process now blocks until killed
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert "DRAIN" in slurm_cluster.node_state("gpu-node-01")
        ctx = ToolContext(slurm=SlurmCLI(slurm_cluster.env))
        with Ledger(ledger_path) as lg:
            assert action_status(lg, aid) == "executing"
            with pytest.raises(GateRefused, match="already executing"):
                approve_action(lg, aid, person("bob"), policy)
            approve_action(lg, other, person("alice"), policy)  # the limit still counts gpu-node-01
            with pytest.raises(GateRefused, match=r"blast radius: 2 nodes .*\(gpu-node-01\)"):
                execute_action(lg, other, ctx, policy)
            started = store.events(lg, aid)[-1].occurred_at
            with pytest.raises(GateRefused, match="may still be running"):
                reconcile_action(lg, aid, ctx, now=started + timedelta(seconds=5))
            later = started + timedelta(seconds=registry()["slurm_drain_node"].timeout_s + 61)
            done = reconcile_action(lg, aid, ctx, now=later)
            assert done.ok and done.detail["reconciled"] is True
            assert action_status(lg, aid) == "executed"
            kinds = [e.kind for e in store.events(lg, aid)]
        assert kinds.count("execution_started") == 1 and kinds.count("execution") == 1
