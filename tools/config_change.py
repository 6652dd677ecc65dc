"""Apply a configuration change to a manifest or job script: exact text edits, previewed as a
unified diff. A proposal that describes a change only in words names no file and no edits:
it is advice until a person completes it. Runs only through the approval gate.

The write cannot be redirected: the target's real path (links resolved) is what the policy's
scope checked, the file is written through a descriptor of its real folder opened without
following links, the new text goes to a temporary file created exclusively there, and the file
is refused when its content changed since the approval (the approver saw a diff of it)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from pathlib import Path

from pydantic import BaseModel, Field

from goodput_agent.actions.runner import ActionOutput
from goodput_agent.actions.textdiff import unified
from goodput_agent.toolkit import GATE_TARGET, ActionTarget, MutatingTool, ToolContext, ToolPreview


class Edit(BaseModel):
    old: str = Field(min_length=1)
    new: str


class ConfigChangeInput(BaseModel):
    path: str = Field(min_length=1)  # the manifest or job script
    edits: list[Edit] = Field(min_length=1)
    change: str | None = None  # the change in words, as proposed


def apply_edits(path: str, before: str, edits: list[Edit]) -> str:
    after = before
    for e in edits:
        n = after.count(e.old)
        if n != 1:
            raise ValueError(f"{path}: {e.old!r} occurs {n} times (an edit must match once)")
        after = after.replace(e.old, e.new)
    return after


def changed(args: ConfigChangeInput) -> tuple[str, str]:
    path = Path(args.path)
    try:
        before = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    return before, apply_edits(args.path, before, args.edits)


def file_diff(path: str, before: str, after: str) -> str:
    return unified(before, after, f"a/{path}", f"b/{path}")


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _read_at(folder: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _real_folder(real: Path) -> int:
    """A descriptor of the target's folder, opened without following a link, that is still the
    folder the path resolved to."""
    folder = os.open(real.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    proc = f"/proc/self/fd/{folder}"
    if os.path.exists(proc) and os.path.realpath(proc) != str(real.parent):
        os.close(folder)
        raise PermissionError(f"{real.parent}: the folder changed while it was opened")
    return folder


def _create_exclusively(folder: int, real: Path) -> tuple[int, str]:
    """A new file beside the target: O_EXCL|O_NOFOLLOW, so a link planted under its name
    makes this fail instead of writing where the link points."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for _ in range(8):
        name = f".{real.name}.{secrets.token_hex(6)}.goodput-tmp"
        try:
            return os.open(name, flags, 0o600, dir_fd=folder), name
        except FileExistsError:
            continue
    raise FileExistsError(f"{real.parent}: cannot create a temporary file beside {real.name}")


def write_exclusively(real: Path, text: str) -> None:
    """Replace `real` with `text`: a new file created exclusively in the same folder, its
    mode copied, fsynced, then renamed over the target, all relative to the folder's
    descriptor."""
    folder = _real_folder(real)
    try:
        mode = os.stat(real.name, dir_fd=folder, follow_symlinks=False).st_mode & 0o7777
        fd, name = _create_exclusively(folder, real)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.replace(name, real.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder)
            raise
    finally:
        os.close(folder)


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

    def fingerprint(self, args: ConfigChangeInput) -> dict[str, str]:
        real = Path(args.path).resolve()
        try:
            return {str(real): _digest(real.read_bytes())}
        except OSError as exc:
            return {str(real): f"unreadable: {exc.strerror}"}

    def reconcile(self, ctx: ToolContext, args: ConfigChangeInput) -> bool | None:
        try:
            text = Path(args.path).resolve().read_text(encoding="utf-8")
        except OSError:
            return None
        if all(e.new in text and e.old not in text for e in args.edits):
            return True
        return False if all(text.count(e.old) == 1 for e in args.edits) else None

    def run(self, ctx: ToolContext, args: ConfigChangeInput) -> ActionOutput:
        real = Path(args.path).resolve(strict=True)
        checked = GATE_TARGET.get()
        if checked is None or str(real) not in checked.paths:
            seen = ", ".join(checked.paths) if checked else "-"
            raise PermissionError(f"{args.path} now resolves to {real}, which is not the file "
                                  f"the policy checked ({seen})")
        folder = _real_folder(real)
        try:
            before = _read_at(folder, real.name).decode("utf-8")
        finally:
            os.close(folder)
        after = apply_edits(args.path, before, args.edits)
        write_exclusively(real, after)
        return ActionOutput(ok=True, command=f"edit {real}",
                            response={"diff": file_diff(args.path, before, after)})


TOOL = ConfigChange()
