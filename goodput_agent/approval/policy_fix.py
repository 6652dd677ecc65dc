"""What would make a refused action pass the policy: the tool's section of the policy as it
would have to read (enabled, the person among its approvers, the node, namespace or file in
its scope), checked by running the policy's own checks again with those lines, and what no
policy line changes (a claim's confidence, the retry rule, a missing verdict) said apart.
"""

from __future__ import annotations

import shlex

import yaml
from pydantic import BaseModel

from goodput_agent.approval.gate_checks import policy_reasons
from goodput_agent.approval.identity import Identity
from goodput_agent.approval.policy import (
    SHIPPED_SOURCE,
    Policy,
    ToolPolicy,
    site_policy_path,
)
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import ActionRow

SOMEONE = "NAME"  # the approver placeholder when the person asking is not known


class PolicyFix(BaseModel):
    policy: str  # the file to edit (the shipped default is not: the one beside the ledger)
    lines: str  # the tool's section as it would read (YAML, under `tools:`)
    passes: bool  # with these lines the policy's checks allow it
    remaining: list[str]  # what these lines cannot change
    init: str | None = None  # with no policy of the site's yet: the command that writes one


def _widened(tp: ToolPolicy, policy: Policy, action: ActionRow, who: Identity | None
             ) -> ToolPolicy:
    """The tool's policy with just enough added for this action and this person."""
    from goodput_agent.toolkit import MutatingTool, registry

    new = tp.model_copy(deep=True)
    new.enabled = True
    if who is None:
        new.approvers += [] if new.approvers else [SOMEONE]
    elif not policy.may_approve(action.tool, who.person, who.groups):
        new.approvers.append(who.person)
    tool = registry().get(action.tool)
    if not isinstance(tool, MutatingTool):
        return new
    target = tool.target(tool.input_model.model_validate(action.args))
    scope = new.scope
    scope.nodes += [n for n in target.nodes if scope.nodes and not scope.node_allowed(n)]
    scope.paths += [p for p in target.paths if not scope.path_allowed(p)]
    if target.namespace and scope.namespaces and target.namespace not in scope.namespaces:
        scope.namespaces.append(target.namespace)
    return new


def _section(name: str, tp: ToolPolicy) -> str:
    body = tp.model_dump(mode="json", exclude_defaults=True)
    body = {"enabled": True, "approvers": tp.approvers, **body}
    return yaml.safe_dump({"tools": {name: body}}, sort_keys=False, default_flow_style=None,
                          width=100)


def policy_fix(ledger: Ledger, action: ActionRow, policy: Policy, who: Identity | None
               ) -> PolicyFix | None:
    """None when the policy already allows it (or the action is no tool's: nothing to fix)."""
    reasons, tool, args = policy_reasons(ledger, action, policy, who)
    if not reasons or tool is None or args is None:
        return None
    tp = _widened(policy.tool(action.tool), policy, action, who)
    wider = policy.model_copy(update={"tools": {**policy.tools, action.tool: tp}})
    wider.source = policy.source
    judge = who if who is not None else Identity(person=SOMEONE, via="login")
    left, _, _ = policy_reasons(ledger, action, wider, judge)
    fix = PolicyFix(policy=policy.source, lines=_section(action.tool, tp), passes=not left,
                    remaining=left)
    if policy.source == SHIPPED_SOURCE:  # not a file to edit: the site's own, beside the ledger
        fix.policy = str(site_policy_path(ledger.path))
        argv = ["goodput", "policy", "init", "--tool", action.tool]
        for flag, values in (("--approver", tp.approvers), ("--path", tp.scope.paths)):
            for v in values:
                argv += [flag, v]
        fix.init = shlex.join([*argv, "--ledger", str(ledger.path)])
    return fix
