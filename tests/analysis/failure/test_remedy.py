"""A retry is useful only if the condition that caused the failure has changed."""

import pytest

from goodput_agent.analysis.failure.analyze import FailureVerdict
from goodput_agent.analysis.failure.remedy import remedy
from goodput_agent.core.events import Event, EventKind, Locator, Role


def verdict(category: str, node: str | None = "gpu-07", **detail) -> FailureVerdict:
    primary = Event(kind=EventKind.xid, role=Role.primary, category=category, summary="s",
                    excerpt="x", locator=Locator(path="k", line_start=1, line_end=1),
                    detail=detail)
    return FailureVerdict(category=category, summary="s", node=node, rank=3, gpu="0000:9b:00",
                          confidence=0.9, primary=primary)


def test_hardware_fault_retries_only_without_that_node() -> None:
    r = remedy(verdict("gpu_hardware", xid=79), "slurm", "42")
    assert r.retry_useful is True
    tools = {p.tool: p for p in r.proposals}
    assert tools["slurm_drain_node"].args["node"] == "gpu-07"
    assert tools["slurm_requeue_job"].args == {"job": "42", "exclude": ["gpu-07"]}
    assert all(p.mutating for p in r.proposals)
    unlocated = remedy(verdict("gpu_hardware", node=None, xid=79), "slurm", "42")
    assert unlocated.retry_useful is False


def test_kubernetes_isolation_uses_cordon() -> None:
    r = remedy(verdict("network_fault"), "kubernetes", "train/llama")
    assert [p.tool for p in r.proposals] == ["k8s_cordon_node", "k8s_restart_job_pods"]


@pytest.mark.parametrize("category", ["gpu_oom", "host_oom", "application_error"])
def test_bare_retry_is_not_useful_and_a_change_is_advised(category: str) -> None:
    """A change known only in words is advice (the planner makes it exact where the bundle
    holds the file): never a proposal a gate could be asked to run."""
    r = remedy(verdict(category), "slurm", "42")
    assert r.retry_useful is False
    assert r.proposals == []
    assert r.advice and r.advice[0].topic in ("config_change", "code_fix")


@pytest.mark.parametrize(("category", "topic"), [("gpu_hardware", "gpu_service"),
                                                 ("application_error", "code_fix"),
                                                 ("hang", "collect_stacks")])
def test_what_no_tool_does_is_advice_never_a_proposal(category: str, topic: str) -> None:
    r = remedy(verdict(category, xid=79), "slurm", "42")
    assert topic in [a.topic for a in r.advice]
    assert topic not in [p.tool for p in r.proposals]
    assert all(p.tool.startswith(("slurm_", "k8s_", "config_change")) for p in r.proposals)


@pytest.mark.parametrize("category", ["time_limit", "preempted"])
def test_external_stops_resume_from_checkpoint(category: str) -> None:
    r = remedy(verdict(category, node=None), "slurm", "42")
    assert r.retry_useful is True
    assert r.proposals[0].args["resume_from_checkpoint"] is True


def test_unknown_cause_gives_unknown_retry() -> None:
    assert remedy(verdict("unknown"), None, None).retry_useful is None


def test_shared_memory_bus_error_asks_for_more_shm() -> None:
    r = remedy(verdict("host_oom", shm=True), "kubernetes", "train/x")
    assert r.retry_useful is False
    assert "shm" in r.advice[0].text
