"""Cordon and uncordon: PATCH a node's spec.unschedulable (what `kubectl cordon` sends)."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.actions.kube import STRATEGIC, K8sName, api_result, call_text, core, diff
from goodput_agent.actions.runner import ActionOutput
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class NodeInput(BaseModel):
    node: K8sName


def _spec(node: object) -> dict:
    return {"spec": {"unschedulable": bool(node.spec.unschedulable)}}  # type: ignore[attr-defined]


class NodeSchedulable(MutatingTool[NodeInput, ActionOutput]):
    input_model = NodeInput
    output_model = ActionOutput
    requires = ("kube",)
    timeout_s = 60.0
    unschedulable: bool

    def body(self) -> dict:
        return {"spec": {"unschedulable": self.unschedulable}}

    def command(self, args: NodeInput) -> str:
        verb = "cordon" if self.unschedulable else "uncordon"
        return (call_text("PATCH", f"/api/v1/nodes/{args.node}", self.body(), STRATEGIC)
                + f"  # kubectl {verb} {args.node}")

    def preview(self, ctx: ToolContext, args: NodeInput) -> ToolPreview:
        api = core(ctx)
        now = api.read_node(args.node)
        dry = api.patch_node(args.node, self.body(), dry_run="All", _content_type=STRATEGIC)
        return ToolPreview(command=self.command(args),
                           dry_run=diff(_spec(now), _spec(dry), f"node/{args.node}"))

    def target(self, args: NodeInput) -> ActionTarget:
        return ActionTarget(nodes=[args.node], isolates=self.unschedulable)

    def partitions(self, ctx: ToolContext, args: NodeInput):  # noqa: ANN201 - see gate
        """The cluster's schedulable pool: all nodes, and those already cordoned."""
        if not self.unschedulable:
            return []
        nodes = core(ctx).list_node().items
        return [("cluster", [n.metadata.name for n in nodes],
                 [n.metadata.name for n in nodes if n.spec.unschedulable])]

    def reconcile(self, ctx: ToolContext, args: NodeInput) -> bool | None:
        return bool(core(ctx).read_node(args.node).spec.unschedulable) == self.unschedulable

    def run(self, ctx: ToolContext, args: NodeInput) -> ActionOutput:
        return api_result(ctx, self.command(args), lambda: core(ctx).patch_node(
            args.node, self.body(), _content_type=STRATEGIC))
