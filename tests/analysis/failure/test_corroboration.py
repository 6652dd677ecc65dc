"""Confidence bounded by corroboration (issue 24): a verdict resting on one artifact that
reports someone else's record stays at most 0.6 and says what would confirm it; the record of
the component that acted or holds the state (a memory monitor's kill, the GPU's state as its
driver, NVML or the device plugin report it) stays at most OWNERS_RECORD and names the kernel's
record it lacks; the first-hand record lifts the bound; a bundle mostly unread says so first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from goodput_agent.analysis.failure.analyze import diagnose
from goodput_agent.analysis.failure.ceilings import OWNERS_RECORD, UNCORROBORATED
from goodput_agent.analysis.failure.observations import BUNDLE_FACTS, Activity, Observations
from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role

T0 = datetime(2024, 5, 1, 10, tzinfo=UTC)


def ev(kind, category, *, t=0.0, node=None, rank=None, path="logs/rank0.log", **detail):
    return Event(kind=kind, role=Role.primary, category=category, ts=T0 + timedelta(seconds=t),
                 clock=Clock.absolute, node=node, rank=rank, summary=f"{kind.value}",
                 excerpt="x", locator=Locator(path=path, line_start=1, line_end=1),
                 detail=detail)


def test_a_kill_others_announce_stays_at_most_0_6_and_names_the_kernel_record() -> None:
    kill = ev(EventKind.signal, "host_oom", node="gpu-1", weight=0.6,
              kernel_record_missing=True)
    v = diagnose(Observations(events=[kill]))
    assert v.category == "host_oom" and v.confidence <= 0.6
    assert any("would confirm" in u and "kernel log" in u for u in v.unknowns)


def test_the_kernels_own_oom_line_lifts_the_bound() -> None:
    kill = ev(EventKind.signal, "host_oom", t=1, node="gpu-1", weight=0.6,
              kernel_record_missing=True)
    kernel = ev(EventKind.host_oom_kill, "host_oom", node="gpu-1", path="nodes/gpu-1/kern.log")
    obs = Observations(events=[kill, kernel], activity=[
        Activity(path="nodes/gpu-1/kern.log", node="gpu-1", rank=None, first=T0, last=T0,
                 format="kernel_log")])
    v = diagnose(obs)
    assert v.category == "host_oom" and v.confidence > 0.6


# each owner's record, as its parser emits it
OWNERS = {
    "nvidia-smi": ev(EventKind.gpu_device_unhealthy, "gpu_hardware", weight=0.85,
                     user_space="nvidia-smi", path="notes/smi.txt"),
    "device plugin": ev(EventKind.gpu_device_unhealthy, "gpu_hardware", weight=0.8,
                        user_space="device plugin", path="k8s/nodes.txt"),
    "cuda driver": ev(EventKind.cuda_error, "gpu_hardware", rank=0, confidence="high",
                      cuda_error="uncorrectable ECC error encountered"),
    "ray": ev(EventKind.host_oom_kill, "host_oom", monitor="ray", weight=0.9),
    "kubelet": ev(EventKind.host_oom_kill, "host_oom", monitor="kubelet", weight=0.85,
                  path="k8s/describe.txt"),
}
KERNEL_RECORD = {
    "gpu_hardware": lambda t: ev(EventKind.xid, "gpu_hardware", t=t, node="gpu-1", xid=79,
                                 path="nodes/gpu-1/kern.log"),
    "host_oom": lambda t: ev(EventKind.host_oom_kill, "host_oom", t=t, node="gpu-1",
                             path="nodes/gpu-1/kern.log"),
}


@pytest.mark.parametrize("owner", list(OWNERS))
def test_an_owners_record_alone_is_above_a_bystanders_and_names_the_kernels_record(
        owner: str) -> None:
    e = OWNERS[owner]
    v = diagnose(Observations(events=[e]))
    assert v.category == e.category
    assert UNCORROBORATED < v.confidence <= OWNERS_RECORD
    assert any("own record" in u and "kernel" in u for u in v.unknowns), v.unknowns


@pytest.mark.parametrize("owner", list(OWNERS))
def test_the_kernels_record_lifts_an_owners_record(owner: str) -> None:
    e = OWNERS[owner]
    alone = diagnose(Observations(events=[e]))
    kernel = KERNEL_RECORD[e.category](-1)
    both = diagnose(Observations(events=[e, kernel], activity=[
        Activity(path="nodes/gpu-1/kern.log", node="gpu-1", rank=None, first=T0, last=T0,
                 format="kernel_log")]))
    assert both.category == e.category and both.confidence > alone.confidence


@pytest.mark.parametrize("words", [0.4, 0.5])
def test_an_owners_words_that_several_classes_print_stay_below_a_stated_artifact(
        words: float) -> None:
    """`nvidia-smi: No devices were found` or a CUDA `unknown error`: whoever says them."""
    e = ev(EventKind.gpu_device_unhealthy, "gpu_hardware", weight=words,
           user_space="nvidia-smi", path="notes/smi.txt")
    assert diagnose(Observations(events=[e])).confidence < UNCORROBORATED


def test_a_bundle_mostly_unread_says_so_first() -> None:
    exc = ev(EventKind.python_exception, "application_error", rank=0)
    obs = Observations(events=[exc], facts={BUNDLE_FACTS: {
        "bundle_files": 4, "bundle_unread": ["a.bin", "b.pdf", "c.docx"]}})
    v = diagnose(obs)
    assert v.summary.startswith("Most of the bundle could not be read (3 of 4 files")
    assert v.unknowns[0].startswith("Most of the bundle could not be read")
    assert v.confidence <= 0.6
