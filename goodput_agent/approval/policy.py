"""The approval policy: which mutating tools exist, who may approve them, where, how much, and
under which rule a retry is allowed. YAML validated by pydantic; errors name the file and line.
"""

from __future__ import annotations

import fnmatch
import re
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from goodput_agent.core import failure_classes
from goodput_agent.core.errors import BadInput
from goodput_agent.core.timespec import parse_duration


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Scope(_Strict):
    """Where a tool may act. An empty list means: not restricted on that axis — except
    `paths`, where it means no file may be written."""

    partitions: list[str] = Field(default_factory=list)  # Slurm partitions
    namespaces: list[str] = Field(default_factory=list)  # Kubernetes namespaces
    nodes: list[str] = Field(default_factory=list)  # node-name glob patterns (fnmatch)
    # files a config change may write (globs on the absolute path); empty: none at all
    paths: list[str] = Field(default_factory=list)

    def node_allowed(self, node: str) -> bool:
        return not self.nodes or any(fnmatch.fnmatchcase(node, p) for p in self.nodes)

    def path_allowed(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, p) for p in self.paths)


class Preconditions(_Strict):
    """What must hold before an approval is accepted."""

    min_claim_confidence: float = Field(0.75, ge=0.0, le=1.0)  # the claim the action acts on
    claim_names_target: bool = True  # the node acted on is the node the claim names
    concluded: bool = True  # the investigation reached a verdict (not `unknown`)


class ToolPolicy(_Strict):
    enabled: bool = False
    approvers: list[str] = Field(default_factory=list)  # names, or "group:<name>"
    scope: Scope = Field(default_factory=Scope)
    preconditions: Preconditions = Field(default_factory=Preconditions)
    # the two-person rule: this many approvals by different people (2 for a drain, say), or
    # two whenever the action takes more than `two_person_over_nodes` nodes out of service
    approvals_required: int = Field(1, ge=1, le=2)
    two_person_over_nodes: int | None = Field(None, ge=0)

    def approvals_for(self, nodes: int) -> int:
        over = self.two_person_over_nodes
        return 2 if over is not None and nodes > over else self.approvals_required


class Approval(_Strict):
    required: bool = True
    expires_after: timedelta = timedelta(minutes=30)
    bind_to: list[str] = Field(default_factory=lambda: ["tool", "args_hash", "evidence_digests"])
    # login users who may approve on others' behalf with `--as` (a shared admin account, a
    # bot): {login: [names]} ("*": anyone). Everyone else approves as themselves.
    delegates: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("required")
    @classmethod
    def _always(cls, v: bool) -> bool:
        if not v:
            raise ValueError("approval cannot be turned off: every mutating tool needs one")
        return v

    @field_validator("expires_after", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                return parse_duration(v)
            except (ValueError, BadInput):
                raise ValueError(f"not a duration like 30m or 2h: {v!r}") from None
        return v

    @field_validator("bind_to")
    @classmethod
    def _binds_all(cls, v: list[str]) -> list[str]:
        missing = {"tool", "args_hash", "evidence_digests"} - set(v)
        if missing:
            raise ValueError(f"an approval must bind {sorted(missing)} too")
        return v


class Limits(_Strict):
    """Blast radius, counted from the ledger's successful executions."""

    max_nodes_drained_per_day: int = Field(2, ge=0)  # drained or cordoned, rolling 24 h
    max_partition_fraction: float = Field(0.05, ge=0.0, le=1.0)  # of a partition out of service


class RetryRule(_Strict):
    """A retry only when something changed."""

    require_change_for: list[str] = Field(
        default_factory=lambda: list(failure_classes.names_where(retry_needs="change")))
    require_exclusion_for: list[str] = Field(
        default_factory=lambda: list(failure_classes.node_at_fault()))

    @field_validator("require_change_for", "require_exclusion_for")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        known = failure_classes.names()
        bad = [c for c in v if c not in known]
        if bad:
            raise ValueError(f"unknown failure categories {bad}; known: {list(known)}")
        return v


class Policy(_Strict):
    version: int = 1
    approval: Approval = Field(default_factory=Approval)
    groups: dict[str, list[str]] = Field(default_factory=dict)
    tools: dict[str, ToolPolicy] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    retry: RetryRule = Field(default_factory=RetryRule)
    source: str = Field("<built-in>", exclude=True)  # the file it came from

    @field_validator("version")
    @classmethod
    def _v1(cls, v: int) -> int:
        if v != 1:
            raise ValueError("only policy version 1 exists")
        return v

    @field_validator("tools")
    @classmethod
    def _mutating_tools_only(cls, v: dict[str, ToolPolicy]) -> dict[str, ToolPolicy]:
        known = mutating_tool_names()
        for name in v:
            if name not in known:
                raise ValueError(f"{name!r} is not a mutating tool; known: {sorted(known)}")
        return v

    def tool(self, name: str) -> ToolPolicy:
        return self.tools.get(name) or ToolPolicy()

    def may_approve(self, tool: str, approver: str, groups: list[str] | None = None) -> bool:
        """By name, by membership of a policy group, or by a group an authenticating proxy
        asserted for the person (its name is the policy group's)."""
        for entry in self.tool(tool).approvers:
            if entry.startswith("group:"):
                group = entry[len("group:"):]
                if approver in self.groups.get(group, []) or group in (groups or []):
                    return True
            elif entry == approver:
                return True
        return False


def mutating_tool_names() -> set[str]:
    from goodput_agent.toolkit import registry

    return {name for name, t in registry().items() if not t.read_only}


# --- loading with line numbers --------------------------------------------------------------


_UNKNOWN_TOOL = re.compile(r"Value error, '([^']+)' is not a mutating tool")


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Follow a pydantic error location through the YAML node tree; the deepest line found."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, val in node.value:
                if k.value == str(part):
                    nxt, line = val, k.start_mark.line + 1
                    break
            if nxt is None:
                return line
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _kubernetes_kinds(text: str) -> list[str]:
    """The kinds of the documents in `text` when every one is a Kubernetes object (apiVersion
    and kind), else []: such a file is a manifest, which `kubectl apply` reads, not a policy."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        return []
    if not docs or not all(isinstance(d, dict) and {"apiVersion", "kind"} <= d.keys()
                           for d in docs):
        return []
    return [str(d["kind"]) for d in docs]


def parse_policy(text: str, source: str) -> Policy:
    if kinds := _kubernetes_kinds(text):
        raise BadInput(f"{source}: a Kubernetes manifest ({', '.join(dict.fromkeys(kinds))}), "
                       "not a Goodput policy; apply it with kubectl apply -f")
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        raise BadInput(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise BadInput(f"{source}:1: a policy is a YAML mapping (version, approval, tools, ...)")
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
        if loc == ("tools",) and (m := _UNKNOWN_TOOL.match(err["msg"])):
            loc = ("tools", m.group(1))  # point at the unknown tool's own line
        line = _line_of(root, loc)
        path = ".".join(str(p) for p in loc) or "(top)"
        more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        msg = err["msg"].removeprefix("Value error, ")
        raise BadInput(f"{source}:{line or 1}: {path}: {msg}{more}") from None
    policy.source = source
    return policy


def default_policy_text() -> str:
    return resources.files("goodput_agent.policies").joinpath("default.yaml").read_text("utf-8")


# The policy every command and page of one ledger judges by, unless told otherwise: a file
# beside the ledger (`goodput policy init` writes it), so `goodput actions`, `approve`, the
# pages and the API agree on one policy without each being given it.
SITE_POLICY = "policy.yaml"


def site_policy_path(ledger: Path) -> Path:
    return ledger.absolute().parent / SITE_POLICY


def policy_path_for(explicit: Path | None, ledger: Path | None) -> Path | None:
    """--policy, else $GOODPUT_POLICY, else the policy beside the ledger if there is one;
    None: the shipped default."""
    import os

    env = os.environ.get("GOODPUT_POLICY")
    if explicit or env:  # absolute: an approval records the policy it was given under
        return (explicit or Path(env or "")).absolute()
    beside = site_policy_path(ledger) if ledger is not None else None
    return beside if beside is not None and beside.is_file() else None


SHIPPED_SOURCE = "policies/default.yaml"  # the shipped default's name: not a file to edit


def load_policy(path: Path | None = None) -> Policy:
    """The policy in `path`, or the shipped conservative default."""
    if path is None:
        return parse_policy(default_policy_text(), SHIPPED_SOURCE)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the policy: {exc.strerror}") from None
    return parse_policy(text, str(path))
