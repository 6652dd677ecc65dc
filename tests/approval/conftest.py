"""A ledger with one concluded investigation and one proposed action per mutating tool, and a
permissive test policy. Tools' `run` is replaced by a recorder (a fixture) so a test can prove
what the gate did or did not execute."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from goodput_agent.actions.runner import ActionOutput
from goodput_agent.approval.policy import Policy, parse_policy
from goodput_agent.ledger import Ledger
from goodput_agent.toolkit import MutatingTool, ToolContext, registry
from tests.approval.identities import me

TEST_POLICY = """
version: 1
approval: {{expires_after: 30m}}
groups: {{sre: [bob]}}
tools:
{tools}
limits: {{max_nodes_drained_per_day: 2, max_partition_fraction: 1.0}}
"""


def policy_text(**overrides: str) -> str:
    rows = []
    for name in sorted(n for n, t in registry().items() if not t.read_only):
        scope = ', scope: {paths: ["/tmp/*"]}' if name == "config_change" else ""
        rows.append(f"  {name}: " + overrides.get(
            name, '{enabled: true, approvers: [alice, "group:sre", ' + me() + ']' + scope + '}'))
    return TEST_POLICY.format(tools="\n".join(rows))


def valid_args(tmp: Path) -> dict[str, dict[str, Any]]:
    script = tmp / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --mem=64G\nsrun python train.py\n")
    return {
        "slurm_drain_node": {"node": "gpu-node-03", "reason": "goodput: Xid 79 on GPU 0"},
        "slurm_resume_node": {"node": "gpu-node-03"},
        "slurm_requeue_job": {"job": "4242", "exclude": ["gpu-node-03"]},
        "slurm_resubmit_job": {"job": "4242", "script": str(script), "exclude": ["gpu-node-03"]},
        "slurm_hold_job": {"job": "4242"},
        "slurm_release_job": {"job": "4242"},
        "k8s_cordon_node": {"node": "gpu-node-03"},
        "k8s_uncordon_node": {"node": "gpu-node-03"},
        "k8s_delete_pod": {"namespace": "train", "pod": "trainer-0"},
        "k8s_restart_job_pods": {"job": "trainer", "namespace": "train"},
        "k8s_patch_workload": {"namespace": "serve", "name": "vllm", "container": "vllm",
                               "set_args": {"--max-num-seqs": "128"}},
        "k8s_rollout_restart": {"namespace": "serve", "name": "vllm"},
        "config_change": {"path": str(script), "edits": [{"old": "--mem=64G",
                                                          "new": "--mem=128G"}]},
    }


def make_investigation(lg: Ledger, category: str, actions: dict[str, dict[str, Any]],
                       target: str = "bundle-a", node: str | None = "gpu-node-03",
                       confidence: float = 0.9) -> tuple[str, dict[str, int]]:
    inv = lg.start_investigation("why did job 4242 fail?", "failure", target, "test", "0")
    ev = lg.record_evidence(inv, None, "nodes/gpu-node-03/kern.log", "kern.log:12",
                            "NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus", None)
    claim = lg.record_claim(inv, "GPU fell off the bus on gpu-node-03", category, confidence,
                            "confirmed", [ev], [], node=node)
    ids = {tool: lg.record_action(inv, tool, args, True, f"test {tool}", [claim])
           for tool, args in actions.items()}
    lg.record_conclusion(inv, category, confidence, 0, "{}")
    return inv, ids


@dataclass
class Recorder:
    """Stands in for every mutating tool's `run`: records the call, changes nothing."""

    calls: list[tuple[str, dict]] = field(default_factory=list)

    def context(self) -> ToolContext:
        """A context whose cluster handles are this recorder (the replaced `run` never uses
        them; the gate only checks a tool's cluster is there)."""
        return ToolContext(slurm=self, kube=self)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """`run` recorded; `live_check` and `partitions` (which ask the cluster) have no
        cluster to ask here: nothing to object to, and every node in one pool. The tests
        against real Slurm and the API fixture server check them."""
        for tool in registry().values():
            if isinstance(tool, MutatingTool):
                monkeypatch.setattr(type(tool), "run", self._runner(tool.name))
                monkeypatch.setattr(type(tool), "live_check", lambda _self, ctx, args: [])
                if hasattr(tool, "partitions"):  # one pool holding every node it is asked of
                    monkeypatch.setattr(type(tool), "partitions", lambda _self, ctx, args: [
                        ("fixture-pool", _self.target(args).nodes, [])])

    def _runner(self, name: str):  # noqa: ANN202
        def run(_self: MutatingTool, ctx: object, args: Any) -> ActionOutput:
            self.calls.append((name, args.model_dump()))
            return ActionOutput(ok=True, command=f"fixture recorder: {name}")
        return run


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    r = Recorder()
    r.install(monkeypatch)
    return r


@pytest.fixture
def policy() -> Policy:
    return parse_policy(policy_text(), "test-policy.yaml")


@pytest.fixture
def ledger(tmp_path: Path):  # noqa: ANN201
    with Ledger(tmp_path / "ledger.duckdb") as lg:
        yield lg
