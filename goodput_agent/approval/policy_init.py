"""A starting policy for the tools a site uses (`goodput policy init --approver NAME`): each
tool enabled for the named approvers, a config change limited to the files named (or those the
ledger's proposals edit), the shipped limits and retry rule. The text is checked by the same
loader every command uses before it is written."""

from __future__ import annotations

from pathlib import Path

import yaml

from goodput_agent.approval.policy import Policy, mutating_tool_names, parse_policy
from goodput_agent.core.errors import BadInput
from goodput_agent.ledger.actions import ActionRow

HEADER = """\
# Goodput approval policy, written by `goodput policy init`. Every surface of this ledger
# (goodput actions / approve, the pages, the API) judges by it unless given --policy.
# Check an edit with `goodput policy check FILE`; what a refusal needs is shown with it.
"""


def tools_from(actions: list[ActionRow]) -> list[str]:
    """The mutating tools the ledger's investigations proposed, most proposed first."""
    known = mutating_tool_names()
    counts: dict[str, int] = {}
    for a in actions:
        if a.tool in known:
            counts[a.tool] = counts.get(a.tool, 0) + 1
    return sorted(counts, key=lambda t: (-counts[t], t))


def paths_from(actions: list[ActionRow]) -> list[str]:
    """The files the ledger's config changes edit (each resolved as the gate resolves it)."""
    found = [str(Path(str(a.args["path"])).resolve()) for a in actions
             if a.tool == "config_change" and isinstance(a.args.get("path"), str)]
    return list(dict.fromkeys(found))


def starting_policy(approvers: list[str], tools: list[str], paths: list[str],
                    source: str) -> tuple[str, Policy]:
    """The YAML text and the policy it parses to; BadInput naming what is wrong."""
    known = mutating_tool_names()
    unknown = [t for t in tools if t not in known]
    if unknown:
        raise BadInput(f"--tool {', '.join(unknown)}: not a mutating tool; known: "
                       f"{', '.join(sorted(known))}")
    if not approvers:
        raise BadInput("--approver NAME: name at least one person who may approve")
    if not tools:
        raise BadInput(f"name the tools with --tool (known: {', '.join(sorted(known))}); "
                       "the ledger has no proposals to take them from yet")
    if "config_change" in tools and not paths:
        raise BadInput("config_change writes only the files its scope lists: name them with "
                       "--path GLOB (the ledger's proposals edit none yet)")
    section: dict[str, dict] = {}
    for tool in tools:
        section[tool] = {"enabled": True, "approvers": list(approvers)}
        if tool == "config_change":
            section[tool]["scope"] = {"paths": list(paths)}
    body = {"version": 1,
            "approval": {"required": True, "expires_after": "30m",
                         "bind_to": ["tool", "args_hash", "evidence_digests"]},
            "groups": {}, "tools": section}
    shipped = Policy()
    text = HEADER + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=100)
    text += yaml.safe_dump({"limits": shipped.limits.model_dump(mode="json"),
                            "retry": shipped.retry.model_dump(mode="json")},
                           sort_keys=False, default_flow_style=None, width=100)
    return text, parse_policy(text, source)
