"""How a model's failure verdict meets the analysis' (planner/model_verdict.judge): agreement,
a fill-in of what the analysis left open, and a change only with cited evidence the analysis
did not weigh and that came first; everything else refused with the reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from goodput_agent.analysis.failure.model import Alternative, FailureVerdict
from goodput_agent.core.events import Event, EventKind, Locator, Role
from goodput_agent.planner.model_tools import FinishInput
from goodput_agent.planner.model_verdict import judge
from goodput_agent.report import Retry

T0 = datetime(2024, 5, 1, 10, 14, tzinfo=UTC)


def event(category: str, node: str, line: int, at: datetime, rank: int | None = None,
          role: Role = Role.primary) -> Event:
    return Event(kind=EventKind.other, role=role, category=category, ts=at, node=node,
                 rank=rank, summary=f"{category} on {node}", excerpt="x",
                 locator=Locator(path=f"nodes/{node}/kern.log", line_start=line, line_end=line))


XID = event("gpu_hardware", "gpu-03", 14, T0, rank=29)


def verdict(category: str = "gpu_hardware", node: str | None = "gpu-03",
            rank: int | None = 29, alternatives: list[Alternative] | None = None
            ) -> FailureVerdict:
    return FailureVerdict(category=category, summary="analysis", node=node, rank=rank,
                          confidence=0.88, evidence=[XID] if category != "unknown" else [],
                          primary=XID if category != "unknown" else None,
                          alternatives=alternatives or [])


def finish(category: str, node: str | None = None, rank: int | None = None,
           confidence: float = 0.9) -> FinishInput:
    return FinishInput(kind="failure", category=category, summary="model", node=node,
                       rank=rank, confidence=confidence, verdict_claim_id=1,
                       retry=Retry(useful=None, why="-"))


def test_the_same_verdict_is_agreement_whatever_the_model_leaves_open() -> None:
    assert judge(finish("gpu_hardware", "GPU-03.cluster.local"), verdict(), [], 2.0) == \
        (None, "agreed")


def test_another_category_without_primary_evidence_is_refused() -> None:
    symptom = event("network_fault", "gpu-01", 90, T0 + timedelta(minutes=10), role=Role.symptom)
    support, why = judge(finish("network_fault", "gpu-01"), verdict(), [symptom], 2.0)
    assert support is None and "cites no primary network_fault event on gpu-01" in why


def test_an_event_the_analysis_rejected_stays_rejected() -> None:
    oom = event("gpu_oom", "gpu-02", 7, T0 - timedelta(minutes=5))
    v = verdict(alternatives=[Alternative(category="gpu_oom", confidence=0.2, node="gpu-02",
                                          why_not="the job worked past it", evidence=[oom])])
    support, why = judge(finish("gpu_oom", "gpu-02"), v, [oom], 2.0)
    assert support is None and "rejected it: the job worked past it" in why


def test_a_later_event_does_not_replace_the_first_failure() -> None:
    later = event("host_oom", "gpu-02", 7, T0 + timedelta(seconds=30))
    support, why = judge(finish("host_oom", "gpu-02"), verdict(), [later], 2.0)
    assert support is None and "not earlier than the analysis' first failure" in why
    within_skew = event("host_oom", "gpu-02", 8, T0 - timedelta(seconds=1))
    assert judge(finish("host_oom", "gpu-02"), verdict(), [within_skew], 2.0)[0] is None


def test_an_earlier_unweighed_primary_event_is_adopted() -> None:
    earlier = event("host_oom", "gpu-02", 7, T0 - timedelta(minutes=2))
    support, why = judge(finish("host_oom", "gpu-02"), verdict(), [XID, earlier], 2.0)
    assert why == "adopted" and support == [earlier]


def test_what_the_analysis_left_open_is_filled_only_from_evidence() -> None:
    open_node = verdict(node=None, rank=None)
    support, why = judge(finish("gpu_hardware", "gpu-03", 29), open_node, [XID], 2.0)
    assert why == "adopted" and support == [XID]  # a fill-in: no earlier event needed
    support, why = judge(finish("gpu_hardware", "gpu-07"), open_node, [XID], 2.0)
    assert support is None and "on gpu-07" in why


def test_after_no_verdict_any_cited_primary_event_counts() -> None:
    oom = event("gpu_oom", "gpu-02", 7, T0 + timedelta(hours=1))
    support, why = judge(finish("gpu_oom", "gpu-02"), verdict("unknown", None, None), [oom],
                         2.0)
    assert why == "adopted" and support == [oom]
