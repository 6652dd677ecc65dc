"""The one path from a person's approval to execution, whatever the client (`goodput approve`,
the review pages, the API): an action cut off by a crash gets its result from the cluster (it
is never run again); otherwise the approval is recorded and, once the approvals the policy
asks for stand, the gate executes."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from goodput_agent.approval import store
from goodput_agent.approval.gate import GateRefused, approve_action, execute_action
from goodput_agent.approval.identity import Identity
from goodput_agent.approval.policy import Policy
from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger
from goodput_agent.toolkit import ToolContext


class Decision(BaseModel):
    approval: store.Event | None = None
    execution: store.Event | None = None
    waiting: str | None = None  # why nothing ran yet (a second approver is needed)
    refused: str | None = None  # approved, and the gate refused to execute (a ledger row)
    status: str


def approve_and_execute(ledger: Ledger, action_id: int, who: Identity, policy: Policy,
                        ctx: ToolContext) -> Decision:
    """GateRefused (a ledger row) when the approval is refused; an approval the gate then
    refuses to execute is the Decision's `refused` (also a ledger row)."""
    if store.status_of(store.events(ledger, action_id)) == "executing":
        from goodput_agent.approval.reconcile import reconcile_action

        done = reconcile_action(ledger, action_id, ctx)
        return Decision(execution=done, status=store.status_of(store.events(ledger, action_id)))
    approval = approve_action(ledger, action_id, who, policy)
    action = store.action_row(ledger, action_id)
    tp = policy.tool(action.tool)
    from goodput_agent.toolkit import MutatingTool, registry

    tool = registry().get(action.tool)
    nodes = len(tool.target(tool.input_model.model_validate(action.args)).nodes) \
        if isinstance(tool, MutatingTool) else 0
    required = tp.approvals_for(nodes)
    have = {e.actor for e in store.events(ledger, action_id)
            if e.kind == "approval" and e.args_hash == approval.args_hash}
    if len(have) < required:
        return Decision(approval=approval, status="approved",
                        waiting=f"approved by {approval.actor}; the two-person rule asks for "
                                f"{required} different people: waiting for another approver")
    try:
        execution = execute_action(ledger, action_id, ctx, policy)
    except GateRefused as exc:
        return Decision(approval=approval, refused=exc.reason,
                        status=store.status_of(store.events(ledger, action_id)))
    return Decision(approval=approval, execution=execution,
                    status=store.status_of(store.events(ledger, action_id)))


def live_context(tool: str, slurm_conf: Path | None, kubeconfig: Path | None) -> ToolContext:
    """The cluster clients a mutating tool needs, built only for the family it belongs to."""
    if tool.startswith("slurm_"):
        from goodput_agent.sources.slurm import SlurmCLI

        return ToolContext(slurm=SlurmCLI(slurm_conf=str(slurm_conf) if slurm_conf else None))
    if tool.startswith("k8s_"):
        from goodput_agent.sources.errors import SourceError
        from goodput_agent.sources.k8s import K8sSource

        try:  # the same client configuration as the read-only source (kubeconfig or in-cluster)
            api = K8sSource.connect(kubeconfig=kubeconfig).api
        except SourceError as exc:
            raise BadInput(f"{kubeconfig or 'kubeconfig'}: cannot configure the Kubernetes "
                           f"client: {exc}".splitlines()[0]) from None
        return ToolContext(kube=api)
    return ToolContext()
