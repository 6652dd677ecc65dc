from goodput_agent.bundle import BundleFile, Inventory
from goodput_agent.incident import IncidentSpec
from goodput_agent.kinds import infer_kind


def inv(question: str | None, *formats: str) -> Inventory:
    return Inventory(root="/b", incident=IncidentSpec(question=question),
                     files=[BundleFile(rel_path=f"f{i}", size=1, format=f)
                            for i, f in enumerate(formats)])


def test_question_decides_when_the_bundle_can_answer_it() -> None:
    assert infer_kind(inv("why did training slow down?", "kineto_trace", "job_log")) == "slowdown"
    assert infer_kind(inv("why did p99 latency rise?", "openmetrics")) == "latency"
    assert infer_kind(inv("why did job 7 crash?", "job_log")) == "failure"


def test_a_stalled_job_is_a_failure_question() -> None:
    assert infer_kind(inv("why did the job stall?", "job_log", "flight_recorder")) == "failure"


def test_content_decides_when_the_question_cannot_be_answered_from_it() -> None:
    assert infer_kind(inv("why is it slower?", "job_log", "kernel_log")) == "failure"
    assert infer_kind(inv(None, "kineto_trace")) == "slowdown"
    assert infer_kind(inv(None, "prom_api_json")) == "latency"
