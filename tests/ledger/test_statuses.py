"""Action statuses of many investigations at once (the list page's column) say what each
action's own rows say, one action at a time."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import (
    ActionStatus,
    action,
    add_event,
    add_investigation_event,
    events,
    status_of,
    statuses_of,
)
from goodput_agent.web.views import investigation_list
from tests.approval.conftest import make_investigation, valid_args


def test_statuses_of_many_investigations_equal_each_actions_own(tmp_path: Path) -> None:
    args = valid_args(tmp_path)
    with Ledger(tmp_path / "ledger.duckdb") as lg:
        first, a = make_investigation(lg, "gpu_oom", {t: args[t] for t in (
            "slurm_hold_job", "slurm_drain_node", "config_change")})
        second, b = make_investigation(lg, "xid_79", {"slurm_requeue_job":
                                                      args["slurm_requeue_job"]}, target="b2")
        bare, _ = make_investigation(lg, "unknown", {}, target="b3")
        add_event(lg, action(lg, a["slurm_hold_job"]), "rejection", actor="alice", reason="no")
        add_event(lg, action(lg, a["slurm_drain_node"]), "approval", actor="alice")
        add_event(lg, action(lg, b["slurm_requeue_job"]), "approval", actor="bob")
        add_event(lg, action(lg, b["slurm_requeue_job"]), "execution_started", actor="bob")
        add_event(lg, action(lg, b["slurm_requeue_job"]), "execution", actor="bob", ok=False)
        add_investigation_event(lg, second, "verification", actor="bob")  # no action's row

        got = statuses_of(lg, [first, second, bare, first])
        one_by_one = {inv: {aid: status_of(events(lg, aid)) for aid in ids.values()}
                      for inv, ids in ((first, a), (second, b), (bare, {}))}
        assert got == one_by_one
        assert got[first] == {a["slurm_hold_job"]: ActionStatus.REJECTED,
                              a["slurm_drain_node"]: ActionStatus.APPROVED,
                              a["config_change"]: ActionStatus.PROPOSED}
        assert got[second] == {b["slurm_requeue_job"]: ActionStatus.FAILED}
        listed = {row["id"]: row["actions"] for row in investigation_list(lg)}
    assert listed == {first: "1 approved, 1 proposed, 1 rejected", second: "1 failed",
                      bare: "none"}
