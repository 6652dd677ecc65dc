"""No code path executes a mutating tool without a valid approval row: every mutating tool in
the registry is tried without approval, with a wrong argument hash, expired, and twice; the
recorder (a fixture standing in for the tools' `run`) proves nothing ran, and the ledger holds
a refusal row with the reason for each."""

from __future__ import annotations

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
    reject_action,
)
from goodput_agent.approval.policy import parse_policy
from goodput_agent.toolkit import ToolContext, registry
from tests.approval.conftest import make_investigation, policy_text, valid_args
from tests.approval.identities import person

MUTATING = sorted(n for n, t in registry().items() if not t.read_only)
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _kinds(lg, aid: int) -> list[str]:  # noqa: ANN001
    return [e.kind for e in store.events(lg, aid)]


def test_every_mutating_tool_has_a_case(tmp_path: Path) -> None:
    assert set(valid_args(tmp_path)) == set(MUTATING)
    assert len(MUTATING) >= 12


@pytest.mark.parametrize("tool", MUTATING)
def test_refused_without_approval_wrong_hash_expired_and_twice(
        tool: str, tmp_path: Path, ledger, policy, recorder) -> None:  # noqa: ANN001
    args = valid_args(tmp_path)[tool]
    _, ids = make_investigation(ledger, "time_limit", {tool: args})
    aid, ctx = ids[tool], recorder.context()

    with pytest.raises(GateRefused, match="no approval"):
        execute_action(ledger, aid, ctx, policy, now=T0)
    assert recorder.calls == []

    approve_action(ledger, aid, person("alice"), policy, now=T0)
    changed = {**args, "zz_extra": 1} if tool != "slurm_drain_node" else \
        {**args, "node": "gpu-node-04"}
    with pytest.raises(GateRefused, match="binds arguments"):
        execute_action(ledger, aid, ctx, policy, now=T0 + timedelta(minutes=1), args=changed)
    with pytest.raises(GateRefused, match="expired"):
        execute_action(ledger, aid, ctx, policy, now=T0 + timedelta(minutes=31))
    assert recorder.calls == []
    assert action_status(ledger, aid) == "refused"

    done = execute_action(ledger, aid, ctx, policy, now=T0 + timedelta(minutes=2))
    assert done.ok and recorder.calls == [(tool, recorder.calls[0][1])]
    assert action_status(ledger, aid) == "executed"
    with pytest.raises(GateRefused, match="already executed: an action executes once"):
        execute_action(ledger, aid, ctx, policy, now=T0 + timedelta(minutes=3))
    assert len(recorder.calls) == 1
    kinds = _kinds(ledger, aid)
    assert kinds == ["refusal", "approval", "refusal", "refusal", "execution_started",
                     "execution", "refusal"]
    reasons = [e.reason for e in store.events(ledger, aid) if e.kind == "refusal"]
    assert all(reasons) and action_status(ledger, aid) == "executed"


def test_approval_binds_the_evidence_it_was_shown(tmp_path, ledger, policy, recorder) -> None:  # noqa: ANN001
    _, ids = make_investigation(ledger, "time_limit",
                                {"slurm_hold_job": valid_args(tmp_path)["slurm_hold_job"]})
    aid = ids["slurm_hold_job"]
    a = approve_action(ledger, aid, person("bob"), policy, now=T0)  # bob: through group:sre
    p = preview_action(ledger, aid, policy)
    assert a.evidence_digest == p.evidence_digest and a.args_hash == p.args_hash
    assert a.detail and a.detail["claims"][0]["evidence_digests"][0].startswith("sha256:")
    assert a.expires_at == T0 + timedelta(minutes=30)


def test_a_newer_contradicting_investigation_invalidates(tmp_path, ledger, policy,  # noqa: ANN001
                                                         recorder) -> None:
    args = valid_args(tmp_path)
    _, ids = make_investigation(ledger, "gpu_hardware",
                                {"slurm_drain_node": args["slurm_drain_node"]})
    aid = ids["slurm_drain_node"]
    approve_action(ledger, aid, person("alice"), policy)
    make_investigation(ledger, "application_error", {}, node=None)  # same target, later
    with pytest.raises(GateRefused, match="newer investigation .* concluded application_error"):
        execute_action(ledger, aid, recorder.context(), policy)
    assert recorder.calls == []


def test_policy_denials_are_refusal_rows(tmp_path, ledger, recorder) -> None:  # noqa: ANN001
    args = valid_args(tmp_path)
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "slurm_drain_node": args["slurm_drain_node"],
        "k8s_cordon_node": {"node": "other-node-9"},
        "config_change": args["config_change"]})
    default = parse_policy(Path("policies/default.yaml").read_text(), "policies/default.yaml")
    with pytest.raises(GateRefused, match="not enabled by the policy"):
        approve_action(ledger, ids["slurm_drain_node"], person("alice"), default)
    strict = parse_policy(policy_text(
        k8s_cordon_node='{enabled: true, approvers: [alice], scope: {nodes: ["gpu-node-*"]}}'),
        "strict.yaml")
    with pytest.raises(GateRefused, match="may not approve"):
        approve_action(ledger, ids["slurm_drain_node"], person("mallory"), strict)
    with pytest.raises(GateRefused, match="outside the policy's scope"):
        approve_action(ledger, ids["k8s_cordon_node"], person("alice"), strict)
    reject_action(ledger, ids["config_change"], person("alice"), "the script is generated upstream")
    with pytest.raises(GateRefused, match="already rejected"):
        approve_action(ledger, ids["config_change"], person("alice"), strict)
    assert action_status(ledger, ids["config_change"]) == "rejected"
    assert recorder.calls == []
    refusals = ledger.rows("SELECT reason FROM action_events WHERE kind = 'refusal'")
    assert len(refusals) == 4


def test_advice_and_incomplete_proposals_never_execute(ledger, policy, recorder) -> None:  # noqa: ANN001
    _, ids = make_investigation(ledger, "gpu_oom", {
        "gpu_service": {"node": "gpu-node-03"},
        "config_change": {"change": "reduce the micro-batch size"}})
    for aid in ids.values():
        p = preview_action(ledger, aid, policy)
        assert not p.allowed and p.command is None
        with pytest.raises(GateRefused):
            approve_action(ledger, aid, person("alice"), policy)
    assert "not a mutating tool" in preview_action(ledger, ids["gpu_service"], policy).reasons[0]
    assert "path" in preview_action(ledger, ids["config_change"], policy).reasons[0]
    assert recorder.calls == []


def test_retry_after_a_node_fault_must_exclude_the_node_or_follow_its_drain(
        tmp_path, ledger, policy, recorder) -> None:  # noqa: ANN001
    args = valid_args(tmp_path)
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "slurm_drain_node": args["slurm_drain_node"],
        "k8s_restart_job_pods": args["k8s_restart_job_pods"]}, target="b1")
    _, more = make_investigation(ledger, "gpu_hardware", {
        "slurm_requeue_job": {"job": "4242"}}, target="b2")
    with pytest.raises(GateRefused, match="must exclude gpu-node-03 or follow its drain"):
        approve_action(ledger, more["slurm_requeue_job"], person("alice"), policy)
    with pytest.raises(GateRefused, match="must exclude gpu-node-03"):
        approve_action(ledger, ids["k8s_restart_job_pods"], person("alice"), policy)
    approve_action(ledger, ids["slurm_drain_node"], person("alice"), policy)
    execute_action(ledger, ids["slurm_drain_node"], recorder.context(), policy)
    # now it follows a drain
    approve_action(ledger, more["slurm_requeue_job"], person("alice"), policy)
    assert [c[0] for c in recorder.calls] == ["slurm_drain_node"]


def test_bare_retry_after_oom_needs_an_applied_config_change(tmp_path, ledger, policy,  # noqa: ANN001
                                                             recorder) -> None:
    args = valid_args(tmp_path)
    _, ids = make_investigation(ledger, "gpu_oom", {
        "slurm_requeue_job": {"job": "4242"}, "config_change": args["config_change"],
        "slurm_resubmit_job": args["slurm_resubmit_job"]})
    with pytest.raises(GateRefused, match="bare retry after gpu_oom"):
        approve_action(ledger, ids["slurm_requeue_job"], person("alice"), policy)
    approve_action(ledger, ids["config_change"], person("alice"), policy)
    execute_action(ledger, ids["config_change"], recorder.context(), policy)
    # the change edited the job script: a requeue reruns Slurm's stored copy, not the edit
    with pytest.raises(GateRefused, match="resubmit the edited script"):
        approve_action(ledger, ids["slurm_requeue_job"], person("alice"), policy)
    approve_action(ledger, ids["slurm_resubmit_job"], person("alice"), policy)
    execute_action(ledger, ids["slurm_resubmit_job"], recorder.context(), policy)
    assert [c[0] for c in recorder.calls] == ["config_change", "slurm_resubmit_job"]


def test_a_retry_after_a_runtime_config_change_may_requeue(tmp_path, ledger, policy,  # noqa: ANN001
                                                          recorder) -> None:
    config = tmp_path / "train.yaml"  # read by the job when it runs, not copied at submission
    config.write_text("micro_batch_size: 8\n")
    change = {"path": str(config), "edits": [{"old": "micro_batch_size: 8",
                                              "new": "micro_batch_size: 4"}]}
    _, ids = make_investigation(ledger, "gpu_oom", {
        "slurm_requeue_job": {"job": "4242"}, "config_change": change})
    approve_action(ledger, ids["config_change"], person("alice"), policy)
    execute_action(ledger, ids["config_change"], recorder.context(), policy)
    approve_action(ledger, ids["slurm_requeue_job"], person("alice"), policy)
    execute_action(ledger, ids["slurm_requeue_job"], recorder.context(), policy)
    assert [c[0] for c in recorder.calls] == ["config_change", "slurm_requeue_job"]


def test_blast_radius_counts_drains_and_cordons_of_the_last_day(tmp_path, ledger, policy,  # noqa: ANN001
                                                                recorder) -> None:
    ids = {}
    for i, tool in enumerate(("slurm_drain_node", "k8s_cordon_node", "slurm_drain_node")):
        node = f"gpu-node-1{i}"
        args = {"node": node, "reason": "x"} if tool.startswith("slurm") else {"node": node}
        _, got = make_investigation(ledger, "gpu_hardware", {tool: args}, target=f"t{i}",
                                    node=node)
        ids[i] = got[tool]
        approve_action(ledger, ids[i], person("alice"), policy)
    execute_action(ledger, ids[0], recorder.context(), policy)
    execute_action(ledger, ids[1], recorder.context(), policy)
    with pytest.raises(GateRefused, match="blast radius: 3 nodes"):
        execute_action(ledger, ids[2], recorder.context(), policy)
    assert len(recorder.calls) == 2


def test_a_missing_cluster_is_refused_without_spending_the_approval(tmp_path, ledger, policy,  # noqa: ANN001
                                                                    recorder) -> None:
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "slurm_drain_node": valid_args(tmp_path)["slurm_drain_node"]})
    aid = ids["slurm_drain_node"]
    approve_action(ledger, aid, person("alice"), policy)
    with pytest.raises(GateRefused, match="no Slurm cluster to act on"):
        execute_action(ledger, aid, ToolContext(kube=recorder), policy)
    assert execute_action(ledger, aid, recorder.context(), policy).ok  # still valid
    assert len(recorder.calls) == 1


def test_config_change_writes_only_files_the_policy_names(tmp_path, ledger, policy,  # noqa: ANN001
                                                         recorder) -> None:
    _, ids = make_investigation(ledger, "gpu_oom", {"config_change": {
        "path": "/etc/hosts", "edits": [{"old": "localhost", "new": "evil"}]}})
    with pytest.raises(GateRefused, match="/etc/hosts is outside the files the policy lets"):
        approve_action(ledger, ids["config_change"], person("alice"), policy)
    assert recorder.calls == []


@pytest.mark.parametrize("tool", MUTATING)
def test_a_mutating_tool_called_directly_refuses_to_run(tool: str, tmp_path: Path) -> None:
    """Defense in depth: outside the gate, `run` itself refuses (before touching anything)."""
    t = registry()[tool]
    args = t.input_model.model_validate(valid_args(tmp_path)[tool])
    before = (tmp_path / "job.sbatch").read_text()
    with pytest.raises(PermissionError, match="only through the approval gate"):
        t.run(ToolContext(), args)
    assert (tmp_path / "job.sbatch").read_text() == before
