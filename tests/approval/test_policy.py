"""The policy file: validated with errors that name the file and line; the shipped default
enables nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.approval.policy import load_policy, parse_policy
from goodput_agent.core.errors import BadInput
from goodput_agent.toolkit import registry


def _err(text: str) -> str:
    with pytest.raises(BadInput) as exc:
        parse_policy(text, "p.yaml")
    return str(exc.value)


def test_shipped_default_is_conservative_and_lists_every_mutating_tool() -> None:
    p = load_policy()
    mutating = {n for n, t in registry().items() if not t.read_only}
    assert set(p.tools) == mutating
    assert not any(t.enabled or t.approvers for t in p.tools.values())
    assert p.approval.required and p.approval.expires_after.total_seconds() == 1800
    assert p.limits.max_nodes_drained_per_day <= 2 and p.limits.max_partition_fraction <= 0.05


@pytest.mark.parametrize(("text", "where"), [
    ("version: 1\ntools:\n  slurm_drain_node:\n    enabled: true\n    approvers: alice\n",
     "p.yaml:5: tools.slurm_drain_node.approvers"),
    ("version: 1\ntools:\n  slurm_drain_node: {enabled: true}\n  gpu_service: {}\n",
     "p.yaml:4: tools.gpu_service: 'gpu_service' is not a mutating tool"),
    ("version: 1\napproval:\n  required: false\n",
     "p.yaml:3: approval.required: approval cannot be turned off"),
    ("version: 1\n\nlimits:\n  max_partition_fraction: 2\n",
     "p.yaml:4: limits.max_partition_fraction"),
    ("version: 1\napproval:\n  expires_after: soon\n", "p.yaml:3: approval.expires_after"),
    ("version: 1\nretry:\n  require_change_for: [gpu_oom, bananas]\n",
     "p.yaml:3: retry.require_change_for: unknown failure categories ['bananas']"),
    ("version: 1\ntools:\n  slurm_drain_node: {enabled: true, aprovers: [a]}\n",
     "p.yaml:3: tools.slurm_drain_node.aprovers: Extra inputs are not permitted"),
    ("version: 1\ntools: [\n", "p.yaml:3: not valid YAML"),
    ("- just a list\n", "p.yaml:1: a policy is a YAML mapping"),
])
def test_errors_name_file_line_and_field(text: str, where: str) -> None:
    assert _err(text).startswith(where)


def test_groups_and_names_approve(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("version: 1\ngroups: {sre: [bob]}\ntools:\n  slurm_drain_node: "
                 "{enabled: true, approvers: [alice, 'group:sre']}\n")
    p = load_policy(f)
    assert p.may_approve("slurm_drain_node", "alice") and p.may_approve("slurm_drain_node", "bob")
    assert not p.may_approve("slurm_drain_node", "mallory")
    assert not p.may_approve("slurm_requeue_job", "alice")
    assert p.source == str(f)
    with pytest.raises(BadInput, match="cannot read"):
        load_policy(tmp_path / "missing.yaml")


def test_a_kubernetes_manifest_is_named_as_one_not_parsed_as_a_policy() -> None:
    """The shipped RBAC manifest (two documents) is a kubectl file: one line says what it is,
    instead of a YAML error about a second document."""
    manifest = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "rbac.yaml"
    text = manifest.read_text()
    assert text.count("\n---") >= 2  # several documents: the case that confused the check
    msg = _err(text)
    assert msg.startswith("p.yaml: a Kubernetes manifest (")
    assert "ClusterRole" in msg and "not a Goodput policy" in msg and "\n" not in msg
    # a policy that merely has a `kind` key is still checked as a policy
    assert "a Kubernetes manifest" not in _err("version: 1\nkind: ClusterRole\n")
