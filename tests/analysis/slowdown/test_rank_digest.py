"""A rank's digest gives the breakdown and verdict its whole trace gives: the profiler_traces
tool with a runner (digests) against without one (whole traces), on shipped slowdown bundles of
every category, DCGM metrics included where the bundle has them."""

import pickle
from pathlib import Path

import pytest

from goodput_agent.analysis.slowdown.rank_digest import TraceDigest, digest_trace
from goodput_agent.bundle import open_bundle
from goodput_agent.core.parallel import LocalRunner
from goodput_agent.parsing.kineto.load import load_trace
from goodput_agent.toolkit import ToolContext, registry

CASES = Path(__file__).resolve().parents[3] / "evals" / "slowdown_cases"
ONE_OF_EACH = ["s01-input-stall", "s02-host-overhead", "s03-straggler", "s04-communication",
               "s05-gpu-throttling", "s29-communication"]


def tool_output(case: Path, runner: LocalRunner | None) -> dict:
    with open_bundle(case, ("expected.json",)) as bundle:
        bundle.runner = runner
        out = registry()["profiler_traces"].run(ToolContext(bundle=bundle),
                                                  registry()["profiler_traces"].input_model())
        return out.model_dump(mode="json")


@pytest.mark.parametrize("name", ONE_OF_EACH)
def test_digests_give_the_verdict_and_breakdown_of_the_whole_traces(name):
    whole = tool_output(CASES / name, None)
    digested = tool_output(CASES / name, LocalRunner(1))
    assert whole["verdict"]["category"] != "unknown"
    assert digested == whole


def test_a_digest_is_smaller_than_the_trace_it_stands_for():
    case = CASES / "s29-communication"
    with open_bundle(case, ("expected.json",)) as bundle:
        f = bundle.inventory.of_format("kineto_trace")[0]
        path = bundle.root / f.rel_path
        d = digest_trace(str(path), f.rel_path, f.node_hint)
        trace = load_trace(path, f.rel_path, f.node_hint)
    assert isinstance(d, TraceDigest) and d.has_gpu and d.breakdown is not None
    kept = sum(len(s.comm_ts) for s in d.steps)
    assert 0 < kept < len(trace.gpu) / 2  # only the collectives of each step travel
    assert len(pickle.dumps(d)) < path.stat().st_size / 4


def test_an_unreadable_trace_is_its_one_line_reason(tmp_path):
    bad = tmp_path / "rank0.json"
    bad.write_text('{"traceEvents": [')
    reason = digest_trace(str(bad), "rank0.json")
    assert isinstance(reason, str) and reason.startswith("rank0.json")
