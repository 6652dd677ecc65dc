import gzip
import hashlib
import json
from pathlib import Path

from goodput_agent.evals.slowdown_generator import generate_suite, plan_suite
from goodput_agent.parsing.trace_load import load_trace

SHIPPED = Path(__file__).resolve().parents[2] / "evals" / "slowdown_cases"


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_shipped_suite_is_what_the_generator_writes(tmp_path):
    generate_suite(tmp_path)
    assert _digest(tmp_path) == _digest(SHIPPED)


def test_suite_covers_every_cause_with_enough_cases():
    cats = [s.category for s in plan_suite()]
    assert len(cats) >= 25 and {cats.count(c) for c in set(cats)} == {6}


def test_traces_are_kineto_shaped_for_hta_and_the_loader():
    case = SHIPPED / "s03-straggler"
    expected = json.loads((case / "expected.json").read_text())
    files = sorted(case.rglob("*.json.gz"))
    with gzip.open(files[0], "rt") as f:
        text = f.read(4000)
    assert '"rank": ' in text and '"traceEvents": [' in text  # HTA reads "rank": N only
    traces = [load_trace(p, node_hint=p.parts[p.parts.index("nodes") + 1])
              for p in files if "incident" in p.parts]
    nccl = {t.meta.rank: sum(o.dur for o in t.gpu if o.kind == "comm") for t in traces}
    assert min(nccl, key=nccl.get) == expected["rank"]  # the straggler waits least
    assert all(t.meta.host for t in traces)
