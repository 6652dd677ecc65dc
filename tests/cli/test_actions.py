"""`goodput approve | reject | actions | policy check` end to end, with a config change on a
local job script (the one mutating tool that needs no cluster)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from goodput_agent.planner.base import ToolCall
from goodput_agent.planner.loop import execute
from goodput_agent.toolkit import ToolContext, registry
from tests.approval.conftest import Recorder, make_investigation, policy_text, valid_args
from tests.approval.identities import me


def _setup(tmp_path: Path) -> tuple[Path, Path, Path, int]:
    ledger, policy = tmp_path / "l.duckdb", tmp_path / "policy.yaml"
    policy.write_text(policy_text())
    args = valid_args(tmp_path)["config_change"]
    with Ledger(ledger) as lg:
        _, ids = make_investigation(lg, "gpu_oom", {"config_change": args})
    return ledger, policy, Path(args["path"]), ids["config_change"]


def test_approve_shows_the_diff_asks_and_runs_through_the_gate(tmp_path: Path) -> None:
    ledger, policy, script, aid = _setup(tmp_path)
    base = ["--ledger", str(ledger), "--policy", str(policy)]
    r = CliRunner().invoke(cli, ["approve", str(aid), *base], input="n\n")
    assert r.exit_code == 2 and "not confirmed" in r.output
    assert "-#SBATCH --mem=64G" in r.output and "+#SBATCH --mem=128G" in r.output
    assert "--mem=64G" in script.read_text()  # nothing ran

    # a typed name is not a person: approving as someone else is refused and recorded
    r = CliRunner().invoke(cli, ["approve", str(aid), "--as", "mallory", "--yes", *base])
    assert r.exit_code == 2 and f"you are logged in as {me()}, not mallory" in r.output
    assert "approval.delegates" in r.output and "--mem=64G" in script.read_text()
    with Ledger(ledger, read_only=True) as lg:
        refusal = lg.rows("SELECT actor, reason, detail_json FROM action_events")[-1]
    assert refusal["actor"] == me() and "not mallory" in refusal["reason"]

    r = CliRunner().invoke(cli, ["approve", str(aid), "--yes", "--json",
                                 *base])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{\n  \"preview\""):])
    assert out["status"] == "executed" and out["approval"]["actor"] == me()
    assert out["approval"]["detail"]["authenticated"]["via"] in ("login", "sudo")
    assert "+#SBATCH --mem=128G" in out["execution"]["detail"]["output"]["response"]["diff"]
    assert "--mem=128G" in script.read_text()

    r = CliRunner().invoke(cli, ["approve", str(aid), "--yes", *base])
    assert r.exit_code == 2 and "already executed" in r.output
    r = CliRunner().invoke(cli, ["actions", "--json", *base])
    assert json.loads(r.output)["actions"][0]["status"] == "executed"


def test_reject_records_the_reason(tmp_path: Path) -> None:
    ledger, policy, _, aid = _setup(tmp_path)
    r = CliRunner().invoke(cli, ["reject", str(aid), "--why", "generated upstream",
                                 "--json", "--ledger", str(ledger)])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["reason"] == "generated upstream"
    r = CliRunner().invoke(cli, ["approve", str(aid), "--yes", "--ledger",
                                 str(ledger), "--policy", str(policy)])
    assert r.exit_code == 2 and "already rejected" in r.output


def test_policy_check_cli(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("version: 1\ntools:\n  slurm_drain_node:\n    enabled: yes please\n")
    r = CliRunner().invoke(cli, ["policy", "check", str(bad)])
    assert r.exit_code == 2 and f"{bad}:4: tools.slurm_drain_node.enabled" in r.output
    r = CliRunner().invoke(cli, ["policy", "check", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["enabled"] == {}
    rbac = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "rbac.yaml"
    r = CliRunner().invoke(cli, ["policy", "check", str(rbac)])
    assert r.exit_code == 2 and "a Kubernetes manifest" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_the_planner_loop_refuses_every_mutating_tool(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    rec = Recorder()
    rec.install(monkeypatch)
    args = valid_args(tmp_path)
    with Ledger(tmp_path / "l.duckdb") as lg:
        inv, _ = make_investigation(lg, "gpu_hardware", {})
        for i, name in enumerate(sorted(args)):
            step = execute(ToolCall(tool=name, args=args[name]), ToolContext(), lg, inv, i + 1)
            assert step.error and "approval gate" in step.error and step.output is None
    assert rec.calls == [] and {n for n, t in registry().items() if not t.read_only} == set(args)


def test_propose_completes_a_proposal_that_still_needs_approval(tmp_path: Path) -> None:
    ledger, policy = tmp_path / "l.duckdb", tmp_path / "policy.yaml"
    policy.write_text(policy_text())
    script = tmp_path / "run.sbatch"
    script.write_text("#SBATCH --mem=64G\n")
    with Ledger(ledger) as lg:
        inv, _ = make_investigation(lg, "host_oom", {})
    args = {"path": str(script), "edits": [{"old": "--mem=64G", "new": "--mem=96G"}]}
    base = ["--ledger", str(ledger)]
    r = CliRunner().invoke(cli, ["propose", inv, "config_change", "--args", json.dumps(args),
                                 "--why", "raise the memory limit", "--json",
                                 *base])
    assert r.exit_code == 0, r.output
    aid = json.loads(r.output)["action_id"]
    assert script.read_text() == "#SBATCH --mem=64G\n"  # proposing runs nothing
    r = CliRunner().invoke(cli, ["approve", str(aid), "--yes", "--policy",
                                 str(policy), *base])
    assert r.exit_code == 0, r.output
    assert script.read_text() == "#SBATCH --mem=96G\n"
    bad = CliRunner().invoke(cli, ["propose", inv, "config_change", "--args", '{"path": 1}',
                                   "--why", "x", *base])
    assert bad.exit_code == 2 and "not valid arguments for config_change" in bad.output
    bad = CliRunner().invoke(cli, ["propose", inv, "bundle_inventory", "--args", "{}",
                                   "--why", "x", *base])
    assert bad.exit_code == 2 and "not a mutating tool" in bad.output


def test_a_delegate_the_policy_names_approves_on_anothers_behalf(tmp_path: Path) -> None:
    ledger, policy, script, aid = _setup(tmp_path)
    delegates = f"delegates: {{{me()}: [alice]}}"
    text = policy_text().replace("approval: {expires_after: 30m}",
                                 f"approval: {{expires_after: 30m, {delegates}}}")
    policy.write_text(text.replace(f", {me()}]", "]"))  # alice may approve, the login user not
    r = CliRunner().invoke(cli, ["approve", str(aid), "--as", "alice", "--yes", "--json",
                                 "--ledger", str(ledger), "--policy", str(policy)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{\n  \"preview\""):])
    who = out["approval"]["detail"]["authenticated"]
    assert out["approval"]["actor"] == "alice" and who["via"] == "delegated"
    assert me() in who["detail"] and "--mem=128G" in script.read_text()


def test_a_proposal_says_at_once_whether_the_policy_lets_it_pass(tmp_path: Path) -> None:
    """No policy beside the ledger: the shipped one, which enables no tool; the answer names
    the lines to add, and once they are in the policy beside the ledger, who may approve."""
    ledger = tmp_path / "l.duckdb"
    script = tmp_path / "run.sbatch"
    script.write_text("#SBATCH --mem=64G\n")
    with Ledger(ledger) as lg:
        inv, _ = make_investigation(lg, "host_oom", {})
    args = json.dumps({"path": str(script), "edits": [{"old": "64G", "new": "96G"}]})
    propose = ["propose", inv, "config_change", "--args", args, "--why", "more memory",
               "--ledger", str(ledger)]
    r = CliRunner().invoke(cli, propose)
    assert r.exit_code == 0, r.output
    assert "denied: config_change is not enabled by the policy" in r.output
    # not the shipped file: the one beside the ledger, or the command that writes it
    assert f"to allow it, add to {tmp_path / 'policy.yaml'}:" in r.output
    assert "goodput policy init --tool config_change --approver NAME --path " \
        f"{script} --ledger {ledger}" in r.output
    init = r.output.split("no policy of this site's yet: ")[1].split(" writes one")[0]
    lines = r.output.split("to allow it, add to ")[1].split(":\n", 1)[1]
    for write in ("the command", "the lines"):
        if write == "the command":
            done = CliRunner().invoke(cli, shlex.split(init.replace("NAME", "alice"))[1:])
            assert done.exit_code == 0, done.output
        else:
            (tmp_path / "policy.yaml").write_text("version: 1\n" + lines.replace("NAME", "alice"))
        r = CliRunner().invoke(cli, [*propose, "--json"])
        out = json.loads(r.output)
        assert r.exit_code == 0 and out["allowed"] and out["approvers"] == ["alice"], write
        assert out["policy"] == str(tmp_path / "policy.yaml") and out["fix"] is None


def test_the_report_shows_advice_apart_from_the_actions(tmp_path: Path, demo_bundle: Path
                                                        ) -> None:
    r = CliRunner().invoke(cli, ["investigate", str(demo_bundle), "--ledger",
                                 str(tmp_path / "l.duckdb")], env={"COLUMNS": "120"})
    assert r.exit_code in (0, 3), r.output
    advice = r.output.split("Advice for a person (nothing to approve)")[1]
    assert "gpu_service: The GPU is lost" in advice
    assert "gpu_service" not in r.output.split("Proposed actions")[1].split("Advice for")[0]
