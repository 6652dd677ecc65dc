"""`goodput trace summary|diff|timeline` on small Kineto traces written here."""

import gzip
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from goodput_agent.analysis.slowdown.model import RankBreakdown
from goodput_agent.cli import cli
from goodput_agent.evals.kineto_writer import write_trace

GEMM = "void gemm_kernel<float, 128>(float const*, float*)"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
HOSTILE = "evil\x1b]0;pwned\x07[bold red]kernel[/]</svg><script>"


def rank_events(steps: int, stall_us: float, kernel: str = GEMM) -> list[dict]:
    """Per step: a DataLoader wait (200 µs + stall), then 5 compute kernels and an all-reduce,
    each launched by a cudaLaunchKernel with its correlation id."""
    events, t, corr = [], 1_000.0, 0
    for s in range(steps):
        start = t
        load = 200 + stall_us
        events.append({"ph": "X", "cat": "user_annotation", "name": LOADER, "pid": 1, "tid": 1,
                       "ts": start + 1, "dur": load})
        gpu_free = 0.0
        for i in range(6):
            corr += 1
            at = start + load + 2 + 10 * i
            name, stream, dur = (ALLREDUCE, 20, 400) if i == 5 else (kernel, 7, 1_000)
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 1, "tid": 1, "ts": at, "dur": 5,
                           "args": {"correlation": corr}})
            ts = max(at + 5, gpu_free)
            events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                           "ts": ts, "dur": dur,
                           "args": {"device": 0, "stream": stream, "correlation": corr}})
            gpu_free = ts + dur
        t = gpu_free + 50
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}",
                       "pid": 1, "tid": 1, "ts": start, "dur": t - start})
    return events


def write_rank(path: Path, rank: int, stall_us: float = 0.0, steps: int = 5,
               kernel: str = GEMM) -> Path:
    write_trace(path, rank_events(steps, stall_us, kernel), rank=rank, world_size=2,
                trace_name=str(path), base_ns=1_700_000_000_000_000_000, devices=1)
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["trace", *args], env={"COLUMNS": "200"})


def one_line_error(result: Result, name: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("goodput: error: "), result.stderr
    assert name in lines[0] and "Traceback" not in result.stderr


def test_summary_json_is_the_rank_breakdown(tmp_path):
    trace = write_rank(tmp_path / "rank0.json.gz", 0, stall_us=1_000)
    result = run("summary", str(trace), "--json")
    assert result.exit_code == 0, result.output
    rk = RankBreakdown.model_validate_json(result.stdout)
    assert rk.rank == 0 and len(rk.steps) == 5
    for s in rk.steps:
        assert sum(s.parts().values()) == pytest.approx(s.step_us)
        assert s.idle_input_us >= 1_000  # the stall, under the DataLoader span
    families = {f.family: f for f in rk.kernel_families}
    assert families["gemm_kernel"].calls == 25 and families["gemm_kernel"].kind == "compute"


def test_summary_table_names_steps_families_and_is_safe_for_the_terminal(tmp_path):
    trace = write_rank(tmp_path / "rank1.json", 1, kernel=HOSTILE)
    result = run("summary", str(trace))
    assert result.exit_code == 0, result.output
    assert "Steps on the GPU timeline" in result.stdout and "Kernel families" in result.stdout
    assert "rank 1" in result.stdout
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "[bold red]kernel[/]" in result.stdout  # shown as text, not taken as markup


def test_diff_of_two_run_folders_names_the_input_stall(tmp_path):
    for r in (0, 1):
        write_rank(tmp_path / "base" / f"rank{r}.json.gz", r)
        write_rank(tmp_path / "slow" / f"rank{r}.json.gz", r, stall_us=3_000)
    (tmp_path / "slow" / "notes.txt").write_text("not a trace\n")
    result = run("diff", str(tmp_path / "base"), str(tmp_path / "slow"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verdict"]["category"] == "input_stall"
    inc = {r["rank"]: r for r in data["breakdown"]["incident"]["ranks"]}
    base = {r["rank"]: r for r in data["breakdown"]["baseline"]["ranks"]}
    assert set(inc) == set(base) == {0, 1}
    for r in (0, 1):
        grew = inc[r]["median_step"]["idle_input_us"] - base[r]["median_step"]["idle_input_us"]
        assert grew == pytest.approx(3_000)
    human = run("diff", str(tmp_path / "base"), str(tmp_path / "slow"))
    assert human.exit_code == 0
    assert "verdict: input_stall" in human.stdout and "change" in human.stdout


def test_diff_without_a_slowdown_exits_3(tmp_path):
    a = write_rank(tmp_path / "a" / "rank0.json", 0)
    b = write_rank(tmp_path / "b" / "rank0.json", 0)
    result = run("diff", str(a), str(b), "--json")
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["verdict"]["category"] == "unknown"


def test_timeline_draws_the_median_step_or_the_one_asked(tmp_path):
    trace = write_rank(tmp_path / "rank0.json.gz", 0, steps=5)
    out = tmp_path / "pics" / "step.svg"
    result = run("timeline", str(trace), "-o", str(out), "--step", "3")
    assert result.exit_code == 0, result.output
    assert str(out.resolve()) in result.stdout and "step 3" in result.stdout
    root = ET.parse(out).getroot()
    labels = {g.get("aria-label") for g in root.iter("{http://www.w3.org/2000/svg}g")}
    assert {"GPU 0 · stream 7", "GPU 0 · stream 20", "GPU phases"} <= labels
    result = run("timeline", str(trace), "-o", str(tmp_path / "pics"))
    written = sorted(p.name for p in (tmp_path / "pics").iterdir())
    assert result.exit_code == 0 and len(written) == 2  # the median step, into the folder
    assert all(s in result.stdout for s in ("step ", ".svg"))
    one_line_error(run("timeline", str(trace), "--step", "99"), "rank0.json.gz")
    doc = json.loads(run("timeline", str(trace), "-o", str(out), "--step", "2", "--json").stdout)
    assert (doc["svg"], doc["step"]) == (str(out.resolve()), 2) and doc["duration_ms"] > 0


@pytest.mark.parametrize("command", ["summary", "timeline"])
def test_bad_input_is_one_line_naming_the_file(tmp_path, command):
    one_line_error(run(command, str(tmp_path / "missing.json")), "missing.json")
    text = tmp_path / "notes.json"
    text.write_text("hello, not JSON\n")
    one_line_error(run(command, str(text)), "notes.json")
    whole = write_rank(tmp_path / "whole.json", 0).read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(whole[:400]))  # stops before any GPU event
    one_line_error(run(command, str(cut)), "cut.json.gz")


def test_a_trace_cut_after_its_gpu_events_loads_with_a_warning(tmp_path):
    whole = write_rank(tmp_path / "whole.json", 0, steps=6).read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    result = run("summary", str(cut), "--json")
    assert result.exit_code == 0, result.output
    assert "cut.json" in result.stderr and "warning" in result.stderr
    assert 2 <= len(RankBreakdown.model_validate_json(result.stdout).steps) < 6


def test_diff_of_folders_without_traces_is_bad_input(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "a.txt").write_text("x\n")
    good = write_rank(tmp_path / "good.json", 0)
    one_line_error(run("diff", str(good), str(tmp_path / "empty")), "empty")


def test_malformed_traces_in_a_bundle_each_get_one_reason(tmp_path):
    """The acceptance list's four kinds of broken trace beside good ones: the investigation
    still answers from the good ones, and each broken file has one line naming it."""
    bundle = tmp_path / "bundle"
    for r in (0, 1):
        write_rank(bundle / "traces" / f"rank{r}.json", r, stall_us=3_000)
    whole = (bundle / "traces" / "rank0.json").read_bytes()
    bad = bundle / "traces" / "bad"
    bad.mkdir()
    (bad / "cut.json").write_bytes(whole[:300])
    (bad / "no_events.json").write_text('{"schemaVersion": 1, "deviceProperties": []}')
    negative = [dict(e, dur=-abs(e["dur"])) if e["cat"] == "kernel" else e
                for e in rank_events(2, 0.0)]
    (bad / "negative.json").write_text(json.dumps({"traceEvents": negative}))
    cpu_only = [e for e in rank_events(2, 0.0) if e["cat"] != "kernel"]
    (bad / "cpu_only.json").write_text(json.dumps({"traceEvents": cpu_only}))
    result = CliRunner().invoke(cli, ["investigate", str(bundle), "--json", "--ledger",
                                      str(tmp_path / "l.duckdb")])
    report = json.loads(result.stdout)
    assert report["root_cause"]["category"] == "input_stall", report["root_cause"]
    said = [*report["unknowns"], *report["unread_reasons"].values()]
    for name, why in (("cut.json", "(truncated?)"),
                      ("no_events.json", "no traceEvents array"),
                      ("negative.json", "negative duration"),
                      ("cpu_only.json", "no GPU kernels")):
        lines = [s for s in said if f"bad/{name}" in s]
        assert any(why in s for s in lines), (name, lines)
        assert all("\n" not in s and "Traceback" not in s for s in lines)
