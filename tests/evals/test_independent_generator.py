"""The independent generator: deterministic for a seed, every file in a form the bundle
contract lists, every answer key complete, and the product reads every case without a crash.
The product's score on it is measured (`goodput eval --suite independent`), never asserted."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest

from goodput_agent.evals.independent.case import Case
from goodput_agent.evals.independent.shapes import SHAPES
from goodput_agent.evals.independent.suite import generate_cases
from goodput_agent.report import ALL_CATEGORIES

KERNEL_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(,\d+)?[+-]\d{4} (\S+ kernel: )?"  # short-iso, dmesg iso
    r"|[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d(\.\d+)? \S+ kernel: "  # short, short-precise
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \d{4}\] )")  # dmesg -T
OM_SAMPLE = re.compile(r'^[a-zA-Z_:][\w:]*\{[^}]*\} -?[\d.e+-]+ \d+\.\d{3}$')
RANK_PREFIX = re.compile(r"^(\[rank\d+\]:|\[default\d+\]:|\d+: )")
KERNEL_FILES = ("kern.log", "dmesg.txt", "journal-kernel.log")
SHAPE_ID = re.compile(r"^[fsl]-c\d+-")  # the issue-24 families (shapes.py)


@pytest.fixture(scope="module")
def few_cases() -> list[Case]:
    return generate_cases(14, per_kind=2)


def _digest(cases: list[Case]) -> str:
    h = hashlib.sha256()
    for case in cases:
        h.update(case.expected.model_dump_json().encode())
        for rel in sorted(case.files):
            h.update(rel.encode() + case.files[rel].encode())
        for rel in sorted(case.binary):
            h.update(rel.encode() + case.binary[rel])
    return h.hexdigest()


def test_same_seed_same_suite_other_seed_other_suite(few_cases: list[Case]) -> None:
    assert _digest(generate_cases(14, per_kind=2)) == _digest(few_cases)
    assert _digest(generate_cases(15, kinds="f", per_kind=2)) != _digest(
        [c for c in few_cases if c.expected.kind == "failure"])


def test_suite_size_and_every_class_present() -> None:
    cases = generate_cases(14, kinds="f")  # failures are cheap to make in full
    cats = {c.expected.category for c in cases}
    assert len(cases) >= 30
    assert cats >= {"gpu_hardware", "gpu_oom", "host_oom", "application_error",
                    "network_fault", "node_failure", "time_limit", "preempted", "hang"}


def test_every_class_of_issue_24_has_shapes(few_cases: list[Case]) -> None:
    """Classes 1-11 of issue 24 each have a family; every family appears in the suite."""
    ids = {c.expected.case_id for c in few_cases}
    assert {int(m.group(1)) for _, name, _, _ in SHAPES
            if (m := re.match(r"c(\d+)-", name))} == set(range(1, 12))
    for prefix, name, _, _ in SHAPES:
        assert f"{prefix}-{name}-01" in ids


def test_answer_keys_complete(few_cases: list[Case]) -> None:
    for case in few_cases:
        exp = case.expected
        assert exp.category in ALL_CATEGORIES, exp.case_id
        assert exp.notes and len(exp.notes) > 40, exp.case_id
        if exp.rank is not None:
            assert exp.node, f"{exp.case_id}: a rank without its node"
        timed = any(rel.startswith("metrics/") or rel.endswith("sglang_server.log")
                    or rel == "sglang.log" for rel in case.files)
        if exp.kind == "latency" and exp.category != "unknown" and timed:
            assert exp.change_at and exp.change_at.endswith("Z"), exp.case_id
        if SHAPE_ID.match(exp.case_id) and exp.category == "unknown":
            # `unknown` of a new shape says how far a guess may go
            assert exp.max_confidence is not None and exp.max_confidence <= 0.5, exp.case_id
        if exp.max_confidence is not None:
            assert 0 < exp.max_confidence < 1, exp.case_id


def _check_text_file(rel: str, text: str, base_family: bool = True) -> None:
    name = Path(rel).name
    if rel.startswith("nodes/") and name in KERNEL_FILES:
        assert all(KERNEL_LINE.match(line) for line in text.splitlines()), rel
    elif name == "sacct.txt":
        assert text.splitlines()[0].startswith("JobID|") and "|State|" in text.splitlines()[0]
    elif name == "sacct.json":
        assert json.loads(text)["jobs"][0]["state"]["current"]
    elif name == "scontrol_job.txt":
        assert text.startswith("JobId=") and "JobState=" in text
    elif rel.startswith("metrics/"):
        lines = text.splitlines()
        assert lines[-1] == "# EOF"
        assert all(OM_SAMPLE.match(x) for x in lines if not x.startswith("#")), rel
    elif rel.startswith(("logs/", "output/", "train-")) and "rank" not in name and base_family:
        assert all(RANK_PREFIX.match(x) for x in text.splitlines()), rel
    else:
        _check_shape_file(rel, text)


def _check_shape_file(rel: str, text: str) -> None:
    """The issue-24 forms, each as its real tool prints it."""
    name = Path(rel).name
    first = text.splitlines()[0] if text else ""
    if rel.startswith("k8s/get_"):
        assert first.startswith(("NAME ", "LAST SEEN ")), rel
        starts = [m.start() for m in re.finditer(r"(?<=   )\S", first)]
        for row in text.splitlines()[1:]:  # tabwriter: every column starts where its header does
            assert all(row[i - 1] == " " for i in starts if i < len(row)), (rel, row)
    elif "ras" in name:
        assert "Job summary" in text and re.search(r"^ +\d+ +\d+ +1 +\d+ +\d+$", text, re.M)
    elif name == "dcgmi_diag.txt":
        assert all(x[0] in "+|" for x in text.splitlines()[1:]), rel
    elif rel.startswith("pyspy/"):
        assert first.startswith("Process ") and "(idle)" in text, rel
    elif name in ("getent_hosts.txt", "host_lookup.txt", "etc_hosts", "nslookup.txt"):
        assert re.search(r"\b10\.\d+\.\d+\.\d+\b|in-addr\.arpa", text), rel
    elif name in ("sglang.log", "sglang_server.log"):
        assert all(x.startswith("[20") for x in text.splitlines()), rel
    elif name == "syslog":
        assert "#033[" in text and "\x1b" not in text, rel


def test_every_file_in_a_contract_form(few_cases: list[Case]) -> None:
    for case in few_cases:
        for rel, text in case.files.items():
            _check_text_file(rel, text, base_family=not SHAPE_ID.match(case.expected.case_id))
        for rel, data in case.binary.items():
            if rel.endswith((".json", ".json.gz")):
                doc = json.loads(gzip.decompress(data) if rel.endswith(".gz") else data)
                names = {e.get("name", "") for e in doc["traceEvents"]}
                assert any(n.startswith("ProfilerStep#") for n in names), rel
                assert doc["distributedInfo"]["world_size"] >= 1
            elif rel.startswith("metrics/"):
                _check_text_file(rel, data.decode())


def test_product_reads_every_case_without_a_crash(tmp_path: Path) -> None:
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger

    root = tmp_path / "suite"
    for case in generate_cases(14, per_kind=1):
        case.write(root)
    ledger = Ledger(tmp_path / "l.duckdb")
    try:
        for folder in sorted(p.parent for p in root.glob("*/expected.json")):
            report = investigate_bundle(folder, ledger, ignore=("expected.json",),
                                        pictures_dir=tmp_path / "pictures")
            assert report.root_cause.category in ALL_CATEGORIES, folder.name
    finally:
        ledger.close()
