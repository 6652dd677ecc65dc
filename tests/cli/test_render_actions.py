"""`goodput ledger show` displays the whole chain of an action: evidence → claim → proposal →
approval → execution → verification (and refusals with their reason)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from click.testing import CliRunner

from goodput_agent.approval import store
from goodput_agent.approval.gate import GateRefused, approve_action, execute_action
from goodput_agent.approval.policy import parse_policy
from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from tests.approval.conftest import Recorder, make_investigation, policy_text
from tests.approval.identities import person


def test_ledger_show_displays_the_chain(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    recorder = Recorder()
    recorder.install(monkeypatch)  # the tools' run: a recording fixture
    policy = parse_policy(policy_text(), "test-policy.yaml")
    path = tmp_path / "l.duckdb"
    with Ledger(path) as lg:
        inv, ids = make_investigation(lg, "gpu_hardware", {"slurm_drain_node": {
            "node": "gpu-node-03", "reason": "goodput: Xid 79"}})
        aid = ids["slurm_drain_node"]
        with contextlib.suppress(GateRefused):  # no approval yet: a refusal row
            execute_action(lg, aid, recorder.context(), policy)
        approve_action(lg, aid, person("alice"), policy)
        execute_action(lg, aid, recorder.context(), policy)
        store.record_event(lg, store.action_row(lg, aid), "verification", actor="goodput verify",
                           reason="recovered", detail={"summary": "job completed elsewhere"})
    r = CliRunner().invoke(cli, ["ledger", "show", inv, "--ledger", str(path)],
                           env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    out = r.output
    marks = ["evidence #", "claim #", "proposal: test slurm_drain_node", "refusal #",
             "approval #", "by alice", "execution #", "verification #"]
    pos = [out.find(m) for m in marks]
    assert all(p >= 0 for p in pos), list(zip(marks, pos, strict=True))
    assert pos[1] < pos[0]  # the claim heads its evidence in the tree
    assert pos[3] < pos[4] < pos[6] < pos[7]
    assert "— verified" in out and "no approval" in out and "recovered — job completed" in out
    data = json.loads(CliRunner().invoke(cli, ["ledger", "show", inv, "--json", "--ledger",
                                               str(path)]).output)
    assert [e["kind"] for e in data["action_events"]] == [
        "refusal", "approval", "execution_started", "execution", "verification"]
