"""`goodput eval --suite live` on a part of the suite (the first 40 of its 240 generated
jobs; the whole suite takes ~3 min and its figures are in the README): the goals hold and the
baselines stay behind, and every planted kind of job is in the part."""

from __future__ import annotations

import json
import subprocess
import sys

from goodput_agent.evals.live.generator import make_case, make_suite
from goodput_agent.evals.live.scorer import live_json, score_live


def test_the_goals_hold_on_part_of_the_suite() -> None:
    s = score_live(jobs=40)
    assert set(s.by_fault) == {"healthy", "hang", "straggler", "throttle"}
    o = s.ours
    assert o.precision >= 0.95 and o.recall >= 0.9, o
    assert o.detect_median_s is not None and o.detect_median_s <= 60
    assert o.culprit_accuracy is not None and o.culprit_accuracy >= 0.9
    assert o.hangs_within_deadline is not None and o.hangs_within_deadline >= 0.9
    fixed, watchdog = s.baseline["fixed_thresholds"], s.baseline["watchdog"]
    assert fixed.f1 < o.f1 and watchdog.f1 < o.f1
    assert watchdog.detect_median_s == 600.0 and fixed.detect_median_s > o.detect_median_s
    doc = live_json(s)["live"]
    assert {"precision", "recall", "f1", "detect_median_s", "detect_p95_s",
            "culprit_accuracy", "baseline"} <= set(doc)


def test_the_suite_is_what_the_issue_asks() -> None:
    cases = make_suite(jobs=240)
    assert len(cases) >= 200
    assert {c.nodes for c in cases} == {8, 16, 32, 64, 128, 256, 512}
    onsets = [c.onset - c.start for c in cases if c.onset is not None]
    assert min(onsets) >= 600 and max(onsets) - min(onsets) > 1200  # varied onsets
    healthy = [c for c in cases if c.fault == "healthy"]
    assert any(p.kind == "eval" for c in healthy for p in c.pauses)
    assert any(not p.announced for c in healthy for p in c.pauses)
    assert any(c.counter_gap for c in cases)
    # a job is a function of its seed
    assert make_case(7, "hang").model_dump() == make_case(7, "hang").model_dump()


def test_the_command_prints_the_json_shape() -> None:
    out = subprocess.run([sys.executable, "-c",
                          "from goodput_agent.evals.live.report import eval_live; "
                          "eval_live(True, jobs=10)"], capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    live = json.loads(out.stdout)["live"]
    assert set(live["baseline"]) == {"fixed_thresholds", "watchdog"}
