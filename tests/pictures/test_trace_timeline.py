import random
import xml.etree.ElementTree as ET
from pathlib import Path

from goodput_agent.analysis.slowdown.trace_steps import step_breakdown
from goodput_agent.core.svg import Scale
from goodput_agent.parsing.kineto.model import (
    COMM,
    COMPUTE,
    MEMCPY,
    CpuSpan,
    GpuOp,
    Step,
    Trace,
    TraceMeta,
)
from goodput_agent.pictures import KIND_COLOURS, PART_COLOURS
from goodput_agent.pictures.trace_timeline import (
    LABEL_W,
    MIN_PX,
    RIGHT,
    WIDTH,
    draw_step_timeline,
    merge_spans,
)

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '</svg><script>alert("x")</script>'
LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def op(ts, dur, kind=COMPUTE, corr=-1, stream=7, name=None):
    return GpuOp(ts=ts, dur=dur, kind=kind, name=name or f"k_{kind}", stream=stream, device=0,
                 correlation=corr)


def launch(ts, corr, name="cudaLaunchKernel", cat="cuda_runtime"):
    return CpuSpan(ts=ts, dur=4, name=name, cat=cat, tid=1, correlation=corr)


def small_trace() -> Trace:
    """One 1000 µs step: compute on two streams, exposed comm, a memcpy, an input wait, a
    host-bound gap and a queued gap (the trace of tests/analysis/slowdown/test_trace_steps.py)."""
    gpu = [op(0, 300, corr=1), op(250, 150, corr=2, stream=8),
           op(350, 250, COMM, corr=3, stream=20), op(590, 60, MEMCPY, corr=4),
           op(800, 100, corr=5, name=HOSTILE), op(950, 50, corr=6)]
    runtime = [launch(-10, 1), launch(-8, 2), launch(-6, 3), launch(-4, 4), launch(780, 5),
               launch(10, 6), launch(300, -1, "cudaStreamSynchronize", "cuda_runtime")]
    annotations = [CpuSpan(ts=0, dur=1000, name="ProfilerStep#1", cat="user_annotation", tid=1),
                   CpuSpan(ts=650, dur=100, name=LOADER, cat="user_annotation", tid=1)]
    return Trace(meta=TraceMeta(path="traces/rank0.json", rank=0, host="node-a"), gpu=gpu,
                 runtime=sorted(runtime, key=lambda s: s.ts), annotations=annotations,
                 steps=[Step(number=1, ts=0, dur=1000)])


def rows_of(path: Path) -> dict[str, list[ET.Element]]:
    root = ET.parse(path).getroot()
    return {g.get("aria-label"): g.findall(f"{NS}rect") for g in root.iter(f"{NS}g")}


def test_timeline_draws_every_row_and_one_rect_per_wide_op(tmp_path):
    tr = small_trace()
    out = draw_step_timeline(tr, tr.steps[0], step_breakdown(tr, tr.steps[0]),
                             tmp_path / "sub" / "step.svg")
    rows = rows_of(out)
    assert {"CPU 1 · ProfilerStep", "CPU 1 · dataloader", "CPU 1 · runtime calls",
            "CPU 1 · syncs", "GPU 0 · stream 7", "GPU 0 · stream 8", "GPU 0 · stream 20",
            "GPU phases"} <= set(rows)
    stream7 = rows["GPU 0 · stream 7"]
    assert len(stream7) == 4  # four ops, each tens of pixels wide
    assert [r.get("fill") for r in stream7] == [KIND_COLOURS[COMPUTE], KIND_COLOURS[MEMCPY],
                                               KIND_COLOURS[COMPUTE], KIND_COLOURS[COMPUTE]]
    assert rows["GPU 0 · stream 20"][0].get("fill") == KIND_COLOURS[COMM]
    # the phases row: 0-400 compute, 400-600 comm, 600-650 memory, 650-750 input wait,
    # 750-800 host, 800-900 compute, 900-950 queued (other), 950-1000 compute
    want = ["compute_us", "comm_transfer_us", "memory_us", "idle_input_us", "idle_host_us",
            "compute_us", "idle_other_us", "compute_us"]
    assert [r.get("fill") for r in rows["GPU phases"]] == [PART_COLOURS[p] for p in want]
    text = out.read_text()
    root = ET.fromstring(text)
    assert not list(root.iter(f"{NS}script"))
    titles = [t.text for t in root.iter(f"{NS}title")]
    assert any(t.startswith(HOSTILE) for t in titles)  # the name survives as text
    heading = next(root.iter(f"{NS}text")).text
    assert "traces/rank0.json" in heading and "rank 0" in heading and "step 1" in heading


def test_sub_pixel_ops_merge_into_few_rects_and_none_is_lost():
    rng = random.Random(3)
    spans, t = [], 0.0
    for _ in range(20_000):
        d = rng.uniform(0.5, 3)
        spans.append((t, t + d, rng.choice(["#a", "#a", "#b"]), "k"))
        t += d + rng.uniform(0, 2)
    scale = Scale(0.0, t, LABEL_W, WIDTH - RIGHT)
    boxes = merge_spans(spans, scale)
    assert len(boxes) <= 2 * (WIDTH - RIGHT - LABEL_W)
    assert sum(b.count for b in boxes) == len(spans)
    covered = iter(boxes)
    box = next(covered)
    for s, e, _, _ in spans:  # each span lies inside a rectangle (drawn at least 1 px wide)
        while scale(s) > max(box.x1, box.x0 + MIN_PX) + 1e-9:
            box = next(covered)
        assert box.x0 - 1e-9 <= scale(s) and scale(e) <= max(box.x1, box.x0 + MIN_PX) + 1e-9


def test_wide_ops_are_never_merged():
    spans = [(i * 100.0, i * 100.0 + 60.0, "#a", f"k{i}") for i in range(10)]
    boxes = merge_spans(spans, Scale(0.0, 1000.0, 0.0, 1000.0))
    assert [(b.x0, b.x1, b.name) for b in boxes] == [(s, e, n) for s, e, _, n in spans]


def test_a_step_of_100k_ops_gives_a_small_file(tmp_path):
    rng = random.Random(5)
    gpu, t = [], 0.0
    for i in range(100_000):
        d = rng.uniform(0.5, 4)
        gpu.append(op(t, d, COMM if i % 10 == 0 else COMPUTE, stream=7 + i % 2))
        t += d / 2
    tr = Trace(meta=TraceMeta(path="big.json"), gpu=gpu, steps=[Step(number=0, ts=0, dur=t)])
    out = draw_step_timeline(tr, tr.steps[0], None, tmp_path / "big.svg")
    rows = rows_of(out)
    assert out.stat().st_size < 1_000_000
    assert 0 < len(rows["GPU 0 · stream 7"]) <= 2 * (WIDTH - RIGHT - LABEL_W)
