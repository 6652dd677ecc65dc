"""Which question a bundle asks: words matched whole, answered by the kind whose evidence is
there, and the verdict of a shipped case not moved by how its question is worded."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from goodput_agent.analysis.failure.observations import short_name
from goodput_agent.bundle import BundleFile, Inventory, scan
from goodput_agent.core.incident import IncidentSpec
from goodput_agent.evals.scorer import ANSWER_KEYS, suite_dir
from goodput_agent.investigate import investigate_bundle
from goodput_agent.kinds import asked_kinds, choose_kind, infer_kind
from goodput_agent.ledger import Ledger

DCGM_ONLY = ("# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
             'DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="nid00001"} 1980 1778000000000\n')
VLLM = ("# TYPE vllm:e2e_request_latency_seconds histogram\n"
        'vllm:e2e_request_latency_seconds_bucket{model_name="m",le="1.0"} 3 1778000000000\n')
VLLM_API = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"__name__": "vllm:time_to_first_token_seconds_bucket", "le": "0.1"},
     "values": [[1778000000, "1"]]}]}})


def inv(tmp_path: Path, question: str | None, *formats: str, content: str = "",
        kind: str | None = None) -> Inventory:
    for i, _ in enumerate(formats):
        (tmp_path / f"f{i}").write_text(content)
    return Inventory(root=str(tmp_path), incident=IncidentSpec(question=question, kind=kind),
                     files=[BundleFile(rel_path=f"f{i}", size=1, format=f)
                            for i, f in enumerate(formats)])


def test_question_decides_when_the_bundle_can_answer_it(tmp_path) -> None:
    assert infer_kind(inv(tmp_path, "why did training slow down?", "kineto_trace",
                          "job_log")) == "slowdown"
    assert infer_kind(inv(tmp_path, "why did p99 latency rise?", "openmetrics",
                          content=VLLM)) == "latency"
    assert infer_kind(inv(tmp_path, "why did job 7 crash?", "job_log")) == "failure"


def test_a_stalled_job_is_a_failure_question(tmp_path) -> None:
    assert infer_kind(inv(tmp_path, "why did the job stall?", "job_log",
                          "flight_recorder")) == "failure"


def test_content_decides_when_the_question_cannot_be_answered_from_it(tmp_path) -> None:
    assert infer_kind(inv(tmp_path, "why is it slower?", "job_log", "kernel_log")) == "failure"
    assert infer_kind(inv(tmp_path, None, "kineto_trace")) == "slowdown"
    assert infer_kind(inv(tmp_path, None, "prom_api_json", content=VLLM_API)) == "latency"


@pytest.mark.parametrize(("question", "kinds"), [
    ("why is the new run slower?", ["slowdown"]),  # not "slo"
    ("the step-time SLO is missed", ["slowdown", "latency"]),
    ("p99 went up", ["latency"]),
    ("tokens/s dropped by half", ["slowdown", "latency"]),
    ("throughput fell", ["slowdown", "latency"]),
    ("why did it hang?", ["failure"]),
    ("the job is stuck", ["failure"]),
    ("rank 3 crashed", ["failure"]),
    ("OOM on gpu-02", ["failure"]),
    ("pod OOMKilled", ["failure"]),
    ("the slope of the loss", []),  # "slo" inside a word is no word
    ("what happened on node erroneous-7?", []),
    ("", []),
])
def test_words_match_whole(question: str, kinds: list[str]) -> None:
    assert asked_kinds(question) == kinds


def test_dcgm_metrics_alone_do_not_answer_the_latency_question(tmp_path) -> None:
    choice = choose_kind(inv(tmp_path, "why did p99 latency rise? the SLO is missed",
                             "kineto_trace", "openmetrics", content=DCGM_ONLY))
    assert choice.kind == "slowdown"
    assert choice.note is not None and "vLLM" in choice.note


def test_an_asked_kind_without_its_evidence_falls_back_to_the_one_that_can(tmp_path) -> None:
    spec = inv(tmp_path, "why did it crash?", "openmetrics", content=VLLM, kind="failure")
    choice = choose_kind(spec)
    assert choice.kind == "latency" and choice.note and "scheduler record" in choice.note


def test_nothing_to_answer_from_keeps_the_asked_kind(tmp_path) -> None:
    assert infer_kind(inv(tmp_path, "why did p99 rise?", "openmetrics",
                          content=DCGM_ONLY)) == "latency"
    assert infer_kind(inv(tmp_path, None)) == "failure"


def test_a_large_metrics_file_is_searched_past_its_head(tmp_path) -> None:
    filler = DCGM_ONLY * 40_000  # several scan chunks of DCGM before the first vLLM name
    assert infer_kind(inv(tmp_path, None, "openmetrics", content=filler + VLLM)) == "latency"


# --------------------------------------------------------------------- shipped cases, reworded

REWORDINGS = (
    "why is the new run slower? the step-time SLO is missed",
    "throughput dropped, tokens/s halved",
    "p99 is up, SLO missed",
    "why did it hang?",
    "the job is stuck",
    "it crashed: OOM?",
    "what happened?",
)


def _case(suite: str, index: int) -> Path:
    root = suite_dir(suite)
    return sorted(p.parent for p in root.glob("*/expected.json"))[index]


def _reworded(case: Path, tmp: Path, question: str, extra_dcgm: bool = False) -> Path:
    copy = tmp / case.name
    shutil.copytree(case, copy)
    spec = yaml.safe_load((copy / "incident.yaml").read_text()) if \
        (copy / "incident.yaml").exists() else {}
    spec.pop("kind", None)
    spec["question"] = question
    (copy / "incident.yaml").write_text(yaml.safe_dump(spec))
    if extra_dcgm:
        (copy / "metrics").mkdir(exist_ok=True)
        (copy / "metrics" / "dcgm.om").write_text(DCGM_ONLY + "# EOF\n")
    return copy


MORE_REWORDINGS = ("why did inference latency rise?", "why did training slow down?",
                   "why did job 48213 fail?", "the p99 TTFT SLO is missed", "MFU regressed",
                   "straggler?", "NCCL timeout, then it died", "pod OOMKilled",
                   "samples/s dropped", "why is it slower?", "")


@pytest.mark.parametrize("suite", ["failure", "slowdown", "latency"])
def test_a_reworded_question_does_not_move_the_kind(suite: str) -> None:
    """Every shipped case of the suite, each rewording: its kind stays the suite's."""
    cases = sorted(p.parent for p in suite_dir(suite).glob("*/expected.json"))
    assert len(cases) >= 10
    for case in cases:
        inv = scan(case, ANSWER_KEYS)
        for question in (*REWORDINGS, *MORE_REWORDINGS):
            spec = inv.incident.model_copy(update={"question": question, "kind": None})
            reworded = inv.model_copy(update={"incident": spec})
            assert infer_kind(reworded) == suite, (case.name, question)


@pytest.mark.parametrize("suite", ["failure", "slowdown", "latency"])
def test_a_reworded_question_does_not_move_the_verdict(suite: str, tmp_path) -> None:
    case = _case(suite, 0)
    want = json.loads((case / "expected.json").read_text())
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for i, question in enumerate(REWORDINGS[:4]):
            copy = _reworded(case, tmp_path / str(i), question, extra_dcgm=suite == "slowdown")
            got = investigate_bundle(copy, ledger, ignore=ANSWER_KEYS,
                                     pictures_dir=tmp_path / "pictures")
            node = got.root_cause.node and short_name(got.root_cause.node)
            assert (got.kind, got.root_cause.category, node) == (
                suite, want["category"], want.get("node") and short_name(want["node"])), question
            said = any(u.startswith("missing evidence: the question reads as")
                       for u in got.unknowns)
            assert said == (suite not in asked_kinds(question)), question


def test_the_issue_reproduction_is_answered_as_a_slowdown(tmp_path) -> None:
    """s01 with one DCGM SM-clock sample and "slower ... SLO" was `unknown` ("no latency
    metrics could be read")."""
    copy = _reworded(suite_dir("slowdown") / "s01-input-stall", tmp_path,
                     "why is the new run slower? the step-time SLO is missed", extra_dcgm=True)
    with Ledger(tmp_path / "l.duckdb") as ledger:
        got = investigate_bundle(copy, ledger, ignore=ANSWER_KEYS,
                                 pictures_dir=tmp_path / "pictures")
    assert got.kind == "slowdown" and got.root_cause.category == "input_stall"


def test_evidence_the_collector_could_not_collect_keeps_the_asked_kind(tmp_path) -> None:
    spec = inv(tmp_path, "why did it crash?", "openmetrics", content=VLLM, kind="failure")
    spec.missing = ["missing evidence: the job's scheduler record (slurm, timed out: sacct)"]
    assert choose_kind(spec).kind == "failure"


def test_a_slowdown_question_over_a_log_with_its_own_iteration_times_is_a_slowdown(
        tmp_path) -> None:
    series = "".join(f" iteration {i:>6}/ 500 | elapsed time per iteration (ms): 900.0 |\n"
                     for i in range(1, 4))
    assert infer_kind(inv(tmp_path, "why is it slower?", "job_log", content=series)) == \
        "slowdown"
    choice = choose_kind(inv(tmp_path, "why is it slower?", "job_log",
                             content="step 3 loss 2.1\n"))
    assert choice.kind == "failure" and "iteration times" in (choice.note or "")


def test_text_no_format_claims_never_decides_which_question(tmp_path) -> None:
    """An unclaimed config file beside serving metrics keeps the bundle a latency question; a
    decisive line in such text answers a failure question that is asked."""
    b = tmp_path / "b"
    (b / "metrics").mkdir(parents=True)
    (b / "metrics" / "vllm.om").write_text(VLLM + "# EOF\n")
    (b / "engine_args.yaml").write_text("max_num_seqs: 64\ngpu_memory_utilization: 0.9\n")
    found = scan(b)
    assert [f.rel_path for f in found.files if f.free_text] == ["engine_args.yaml"]
    assert infer_kind(found) == "latency"
    (b / "paste.txt").write_text("salloc: error: Node failure on worker-1\n")
    found = scan(b)
    assert infer_kind(found) == "latency"  # nothing asked: the evidence decides
    found.incident = IncidentSpec(question="why did it crash?")
    assert infer_kind(found) == "failure"
