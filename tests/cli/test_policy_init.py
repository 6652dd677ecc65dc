"""`goodput policy init --approver NAME`: a starting policy beside the ledger for the tools
its investigations proposed, which every command of that ledger then judges by."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from tests.approval.conftest import make_investigation, valid_args
from tests.approval.identities import me


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.output


def test_init_enables_the_proposed_tools_for_the_approvers(tmp_path: Path) -> None:
    ledger = tmp_path / "site" / "ledger.duckdb"
    ledger.parent.mkdir()
    args = valid_args(tmp_path)
    picked = {t: args[t] for t in ("slurm_drain_node", "config_change", "k8s_cordon_node")}
    with Ledger(ledger) as lg:
        make_investigation(lg, "gpu_hardware", picked)
        make_investigation(lg, "gpu_hardware", {"slurm_drain_node": args["slurm_drain_node"]})
    base = ["--ledger", str(ledger)]
    rc, out = _run("policy", "init", "--approver", "alice", "--approver", "group:sre",
                   "--json", *base)
    assert rc == 0, out
    written = ledger.parent / "policy.yaml"
    assert json.loads(out)["file"] == str(written)
    text = yaml.safe_load(written.read_text())
    assert list(text["tools"]) == ["slurm_drain_node", "config_change", "k8s_cordon_node"]
    assert all(t["approvers"] == ["alice", "group:sre"] and t["enabled"]
               for t in text["tools"].values())
    assert text["tools"]["config_change"]["scope"]["paths"] == [
        str(Path(args["config_change"]["path"]).resolve())]

    # every command of this ledger now judges by it
    rc, out = _run("policy", "check", *base)
    assert rc == 0 and str(written) in out
    rc, out = _run("actions", "--pending", "--json", *base)
    assert rc == 0, out
    queue = json.loads(out)
    assert queue["policy"] == str(written) and len(queue["items"]) == 4
    mine = queue["items"][0]["view"]
    assert mine["approvers"] == ["alice", "group:sre (as the sign-on proxy asserts)"]
    assert not mine["can_approve"] and me() in mine["fix"]["lines"]

    rc, out = _run("policy", "init", "--approver", "bob", *base)
    assert rc == 2 and "exists already" in out and out.count("\n") == 1
    rc, out = _run("policy", "init", "--approver", "bob", "--force", *base)
    assert rc == 0 and "bob" in written.read_text() and "alice" not in written.read_text()


def test_init_says_what_it_needs(tmp_path: Path) -> None:
    base = ["--ledger", str(tmp_path / "empty.duckdb")]
    rc, out = _run("policy", "init", "--approver", "alice", *base)
    assert rc == 2 and "name the tools with --tool" in out
    rc, out = _run("policy", "init", "--approver", "alice", "--tool", "gpu_service", *base)
    assert rc == 2 and "gpu_service: not a mutating tool" in out
    rc, out = _run("policy", "init", "--approver", "alice", "--tool", "config_change", *base)
    assert rc == 2 and "--path GLOB" in out
    rc, out = _run("policy", "init", "--approver", "alice", "--tool", "slurm_drain_node",
                   "-o", str(tmp_path / "p.yaml"), *base)
    assert rc == 0 and (tmp_path / "p.yaml").is_file()
    assert not (tmp_path / "policy.yaml").exists()
