"""No proposal names a tool that does not exist: every tool a proposal can name, in every
remedy branch and at every place the product builds one, is a mutating tool in tools/, and the
proposal says it mutates. What no tool does is `Advice`, its own type (tests/evals/
test_remedies.py walks the drafts of every case of the independent suite the same way)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from goodput_agent.analysis.failure.model import FailureVerdict
from goodput_agent.analysis.failure.remedy import Proposal, remedy
from goodput_agent.analysis.slowdown.model import SlowdownVerdict
from goodput_agent.analysis.slowdown.remedy import slowdown_remedy
from goodput_agent.core import failure_classes
from goodput_agent.core.events import Event, EventKind, Locator, Role
from goodput_agent.report import CATEGORIES
from goodput_agent.toolkit import MutatingTool, registry

REPO = Path(__file__).resolve().parents[2]
SCHEDULERS = ("slurm", "kubernetes", None)
# the models a proposal is built as (analysis, planner, report, fleet accounting)
PROPOSAL_MODELS = {"Proposal", "ProposalDraft", "ProposedAction"}


def mutating_tools() -> set[str]:
    return {name for name, tool in registry().items() if isinstance(tool, MutatingTool)}


def failure_verdicts() -> list[FailureVerdict]:
    """Every failure class with and without a node, with the details its remedy reads."""
    out = []
    for name, node, detail in itertools.product(
            (*failure_classes.names(), "unknown"), ("gpu-07", None),
            ({}, {"xid": 79}, {"shm": True}, {"exc_type": "KeyError",
                                               "innermost_frame": {"file": "t.py", "line": 3}})):
        primary = Event(kind=EventKind.xid, role=Role.primary, category=name, summary="s",
                        excerpt="x", locator=Locator(path="k", line_start=1, line_end=1),
                        detail=detail)
        out.append(FailureVerdict(category=name, summary="s", node=node, rank=3, gpu="0",
                                  confidence=0.8, primary=primary))
    return out


def every_remedy_proposal() -> list[Proposal]:
    slow = [SlowdownVerdict(category=c, summary="s", confidence=0.8, rank=1, node=n, gpu="0")
            for c in (*CATEGORIES["slowdown"], "unknown") for n in ("gpu-07", None)]
    return [p for s, job in itertools.product(SCHEDULERS, ("42", None))
            for r in [*(remedy(v, s, job) for v in failure_verdicts()),
                      *(slowdown_remedy(v, s, job) for v in slow)]
            for p in r.proposals]


def test_every_remedy_branch_proposes_only_mutating_tools_that_exist() -> None:
    props = every_remedy_proposal()
    named = {p.tool for p in props}
    # drain, requeue, cordon, restart: the branches were reached
    assert {"slurm_drain_node", "slurm_requeue_job", "k8s_cordon_node",
            "k8s_restart_job_pods"} <= named
    assert named <= mutating_tools(), named - mutating_tools()
    assert all(p.mutating for p in props)


def _str_constants(node: ast.AST) -> list[str]:
    """The strings an expression can evaluate to (either branch of `a if test else b`)."""
    if isinstance(node, ast.IfExp):
        return _str_constants(node.body) + _str_constants(node.orelse)
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    return [s for child in ast.iter_child_nodes(node) for s in _str_constants(child)]


def _assigned(tree: ast.AST, name: str) -> list[str]:
    """The string constants assigned to `name` anywhere in the module (a local or a module
    constant the proposal's tool= refers to)."""
    return [s for n in ast.walk(tree) if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
            for s in _str_constants(n.value)]


def proposal_sites() -> list[tuple[str, int, str, object]]:
    """(file, line, tool, mutating=) for every proposal built with a tool named in the source;
    a tool passed through from another proposal (tool=p.tool) is that one's."""
    out = []
    for path in [*(REPO / "goodput_agent").rglob("*.py"), *(REPO / "tools").glob("*.py")]:
        tree = ast.parse(path.read_text())
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id in PROPOSAL_MODELS):
                continue
            kw = {k.arg: k.value for k in call.keywords}
            value = kw.get("tool")
            if value is None or isinstance(value, ast.Attribute):
                continue
            mutating = kw["mutating"].value if isinstance(kw.get("mutating"), ast.Constant) \
                else "default"
            tools = (_assigned(tree, value.id) if isinstance(value, ast.Name)
                     else _str_constants(value))
            assert tools, f"{path}:{call.lineno}: tool= names no string this test can read"
            out += [(str(path.relative_to(REPO)), call.lineno, t, mutating) for t in tools]
    return out


def test_every_tool_named_where_a_proposal_is_built_is_a_mutating_tool() -> None:
    sites = proposal_sites()
    files = {f for f, *_ in sites}
    # remedy, detect, the planner's exact edits, fleet accounting's drain
    assert len(files) >= 5 and len(sites) >= 12, sites
    mutating = mutating_tools()
    wrong = [s for s in sites if s[2] not in mutating or s[3] not in (True, "default")]
    assert wrong == [], wrong


@pytest.mark.parametrize("model", sorted(PROPOSAL_MODELS - {"ProposedAction"}))
def test_a_proposal_mutates_unless_told_otherwise(model: str) -> None:
    from goodput_agent.planner.base import ProposalDraft

    cls = {"Proposal": Proposal, "ProposalDraft": ProposalDraft}[model]
    assert cls(tool="slurm_drain_node", args={}, rationale="r").mutating is True
