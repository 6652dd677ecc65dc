"""Apply a configuration change to a manifest or job script: exact text edits, previewed as a
unified diff. A proposal that describes a change only in words names no file and no edits:
it is advice until a person completes it. Runs only through the approval gate."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.approval.runner import ActionOutput
from goodput_agent.approval.textdiff import unified
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, ToolPreview


class Edit(BaseModel):
    old: str = Field(min_length=1)
    new: str


class ConfigChangeInput(BaseModel):
    path: str = Field(min_length=1)  # the manifest or job script
    edits: list[Edit] = Field(min_length=1)
    change: str | None = None  # the change in words, as proposed


def changed(args: ConfigChangeInput) -> tuple[str, str]:
    path = Path(args.path)
    try:
        before = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    after = before
    for e in args.edits:
        n = after.count(e.old)
        if n != 1:
            raise ValueError(f"{path}: {e.old!r} occurs {n} times (an edit must match once)")
        after = after.replace(e.old, e.new)
    return before, after


def file_diff(path: str, before: str, after: str) -> str:
    return unified(before, after, f"a/{path}", f"b/{path}")


class ConfigChange(MutatingTool[ConfigChangeInput, ActionOutput]):
    name = "config_change"
    input_model = ConfigChangeInput
    output_model = ActionOutput
    timeout_s = 30.0

    def preview(self, ctx: ToolContext, args: ConfigChangeInput) -> ToolPreview:
        before, after = changed(args)
        return ToolPreview(command=f"edit {args.path} ({len(args.edits)} edit(s))",
                           dry_run=file_diff(args.path, before, after))

    def target(self, args: ConfigChangeInput) -> ActionTarget:
        return ActionTarget(changes_config=True, paths=[str(Path(args.path).resolve())])

    def run(self, ctx: ToolContext, args: ConfigChangeInput) -> ActionOutput:
        before, after = changed(args)
        tmp = Path(f"{args.path}.goodput-tmp")
        tmp.write_text(after, encoding="utf-8")
        os.replace(tmp, args.path)
        return ActionOutput(ok=True, command=f"edit {args.path}",
                            response={"diff": file_diff(args.path, before, after)})


TOOL = ConfigChange()
