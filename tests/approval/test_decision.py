"""The one decision model (approval/decision.py, policy_fix.py, queue.py): what a refusal
needs is checked by applying it; advice has no Approve; a decided action is shown as recorded,
whatever the policy now; the queue holds only what waits, oldest first."""

from __future__ import annotations

from pathlib import Path

import yaml

from goodput_agent.approval.approve_then_execute import approve_and_execute
from goodput_agent.approval.decision import view_action
from goodput_agent.approval.gate import reject_action
from goodput_agent.approval.policy import Policy, parse_policy
from goodput_agent.approval.queue import pending
from goodput_agent.ledger import Ledger
from tests.approval.conftest import Recorder, make_investigation, policy_text, valid_args
from tests.approval.identities import person

NOTHING = "version: 1\ntools: {}\n"


def test_the_lines_a_refusal_offers_make_it_pass_for_every_tool(ledger: Ledger,
                                                               tmp_path: Path) -> None:
    _, ids = make_investigation(ledger, "gpu_hardware", valid_args(tmp_path))
    carol, empty = person("carol"), parse_policy(NOTHING, "site.yaml")
    passing = []
    for tool, aid in ids.items():
        view = view_action(ledger, aid, empty, carol, with_preview=False)
        assert not view.allowed and not view.can_approve and view.fix is not None, tool
        assert view.fix.passes == (view.fix.remaining == []) and view.fix.policy == "site.yaml"
        # what no line changes here: a retry of a job that failed on a node fault, before
        # the node is out of service (the retry rule)
        assert all("the retry must exclude gpu-node-03" in r for r in view.fix.remaining)
        # the offered lines, pasted into the policy, are what the policy's own parser reads
        fixed = parse_policy(NOTHING.replace("tools: {}\n", "") + view.fix.lines, "site.yaml")
        after = view_action(ledger, aid, fixed, carol, with_preview=False)
        assert after.reasons == view.fix.remaining and "carol" in after.approvers, tool
        assert after.can_approve == view.fix.passes
        passing += [tool] if view.fix.passes else []
    assert {"slurm_drain_node", "k8s_cordon_node", "config_change", "k8s_patch_workload",
            "slurm_requeue_job"} <= set(passing)


def test_what_no_policy_line_changes_is_said_apart(ledger: Ledger, tmp_path: Path) -> None:
    args = valid_args(tmp_path)
    _, ids = make_investigation(ledger, "gpu_hardware",
                                {"slurm_drain_node": args["slurm_drain_node"]}, confidence=0.5)
    view = view_action(ledger, ids["slurm_drain_node"], parse_policy(NOTHING, "p.yaml"),
                       person("carol"), with_preview=False)
    assert view.fix is not None and not view.fix.passes
    assert any("confidence" in r for r in view.fix.remaining)
    section = yaml.safe_load(view.fix.lines)["tools"]["slurm_drain_node"]
    assert section["enabled"] is True and section["approvers"] == ["carol"]


def test_advice_rows_have_no_approve_and_wait_for_nothing(ledger: Ledger, policy: Policy
                                                          ) -> None:
    """Rows an older version recorded: a tool that does not exist, a change known in words."""
    _, ids = make_investigation(ledger, "gpu_hardware", {
        "gpu_service": {"node": "gpu-node-03"},
        "config_change": {"change": "raise --mem"}})
    for aid in ids.values():
        view = view_action(ledger, aid, policy, person("alice"))
        assert not view.executable and not view.can_approve and view.fix is None
        assert view.why_not_approve == "advice for a person: no tool runs it"
    q = pending(ledger, policy, person("alice"))
    assert q.items == [] and q.not_executable == sorted(ids.values())


def test_a_decided_action_is_shown_as_recorded_whatever_the_policy_now(
        ledger: Ledger, policy: Policy, recorder: Recorder, tmp_path: Path) -> None:
    args = valid_args(tmp_path)
    _, ids = make_investigation(ledger, "gpu_hardware",
                                {"slurm_drain_node": args["slurm_drain_node"]})
    aid = ids["slurm_drain_node"]
    decision = approve_and_execute(ledger, aid, person("alice"), policy, recorder.context())
    assert decision.status == "executed" and recorder.calls
    view = view_action(ledger, aid, parse_policy(NOTHING, "other.yaml"), person("bob"))
    assert view.status == "executed" and view.policy == "test-policy.yaml"
    assert view.reasons == [] and view.fix is None and not view.can_approve
    assert view.ran is not None and view.ran.ok is True
    assert view.ran.command == "fixture recorder: slurm_drain_node"
    assert [a.person for a in view.ran.approvers] == ["alice"]
    assert view.ran.approvers[0].policy == "test-policy.yaml"


def test_the_second_approval_is_another_persons(ledger: Ledger, tmp_path: Path) -> None:
    text = policy_text(config_change='{enabled: true, approvers: [alice, bob], '
                                     'approvals_required: 2, scope: {paths: ["/tmp/*"]}}')
    two = parse_policy(text, "two.yaml")
    args = valid_args(tmp_path)
    _, ids = make_investigation(ledger, "host_oom", {"config_change": args["config_change"]})
    aid = ids["config_change"]
    assert approve_and_execute(ledger, aid, person("alice"), two, None).waiting
    alice = view_action(ledger, aid, two, person("alice"))
    bob = view_action(ledger, aid, two, person("bob"))
    assert not alice.can_approve and "another person must" in (alice.why_not_approve or "")
    assert bob.can_approve and bob.approved_by == ["alice"] and bob.approvals_required == 2
    assert bob.approval_expires_at is not None


def test_the_queue_is_what_waits_oldest_first_across_investigations(
        ledger: Ledger, policy: Policy, recorder: Recorder, tmp_path: Path) -> None:
    args = valid_args(tmp_path)
    picked = {t: args[t] for t in ("slurm_drain_node", "slurm_hold_job", "k8s_cordon_node")}
    _, first = make_investigation(ledger, "gpu_hardware", picked)
    _, second = make_investigation(ledger, "gpu_hardware", picked, target="bundle-b")
    approve_and_execute(ledger, first["slurm_drain_node"], person("alice"), policy,
                        recorder.context())
    reject_action(ledger, second["slurm_hold_job"], person("bob"), "job already gone")
    q = pending(ledger, policy, person("alice"))
    got = [w.view.action_id for w in q.items]
    gone = {first["slurm_drain_node"], second["slurm_hold_job"]}
    assert got == sorted((set(first.values()) | set(second.values())) - gone)
    assert [w.proposed_at for w in q.items] == sorted(w.proposed_at for w in q.items)
    assert {w.view.investigation_id for w in q.items} == {
        ledger.rows("SELECT investigation_id FROM actions WHERE id = ?", [a])[0][
            "investigation_id"] for a in got}
    assert all(w.view.evidence_digest.startswith("sha256:") for w in q.items)
    assert q.policy == "test-policy.yaml" and q.asked_by == "alice"
