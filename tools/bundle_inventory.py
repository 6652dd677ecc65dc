"""What the incident bundle holds: each file's identified format, and what could not be read."""

from __future__ import annotations

from pydantic import BaseModel

from goodput_agent.bundle import Inventory
from goodput_agent.toolkit import Tool, ToolContext, ToolUnavailable


class InventoryInput(BaseModel):
    pass


class BundleInventoryTool(Tool[InventoryInput, Inventory]):
    name = "bundle_inventory"
    input_model = InventoryInput
    output_model = Inventory
    timeout_s = 60.0

    def run(self, ctx: ToolContext, args: InventoryInput) -> Inventory:
        if ctx.bundle is None:
            raise ToolUnavailable("no incident bundle is open")
        return ctx.bundle.inventory


TOOL = BundleInventoryTool()
