"""What a live finding proposes, by name: each proposal's tool, then each advice's topic
(`advice: collect_stacks`), so a test sees which is which."""

from __future__ import annotations

from goodput_agent.analysis.advice import Advice
from goodput_agent.planner.base import ProposalDraft


def named(found: tuple[list[ProposalDraft], list[Advice]]) -> list[str]:
    drafts, advice = found
    return [p.tool for p in drafts] + [f"advice: {a.topic}" for a in advice]
