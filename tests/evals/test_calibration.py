"""The reliability table and Brier score of `goodput eval`: the computation on hand-built
rows, and over a tiny real run through the scorer and the CLI."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.evals.calibration import Scored, calibrate
from goodput_agent.evals.scorer import score_suite, suite_dir

# fixture data, hand-built: (confidence, correct)
HAND_BUILT_ROWS = [(0.95, True), (0.92, True), (0.9, False), (0.8, True), (0.75, False),
                   (0.6, True), (0.45, False), (0.3, False), (0.1, False), (0.0, False),
                   (1.0, True)]


def test_bins_hold_their_cases_with_mean_confidence_and_accuracy() -> None:
    cal = calibrate(Scored(confidence=c, correct=ok) for c, ok in HAND_BUILT_ROWS)
    got = {b.label: (b.cases, b.mean_confidence, b.accuracy) for b in cal.bins}
    assert got["0.0–0.3"] == (2, pytest.approx(0.05), 0.0)
    assert got["0.3–0.5"] == (2, pytest.approx(0.375), 0.0)  # 0.3 opens its bin
    assert got["0.5–0.7"] == (1, pytest.approx(0.6), 1.0)
    assert got["0.7–0.9"] == (2, pytest.approx(0.775), 0.5)
    assert got["0.9–1.0"] == (4, pytest.approx(0.9425), 0.75)  # 0.9 and 1.0 both here
    assert sum(b.cases for b in cal.bins) == len(HAND_BUILT_ROWS)


def test_brier_is_the_mean_squared_gap_between_confidence_and_correct() -> None:
    cal = calibrate(Scored(confidence=c, correct=ok) for c, ok in HAND_BUILT_ROWS)
    by_hand = (0.05**2 + 0.08**2 + 0.9**2 + 0.2**2 + 0.75**2 + 0.4**2 + 0.45**2 + 0.3**2
               + 0.1**2 + 0 + 0) / 11
    assert cal.brier == pytest.approx(by_hand)


def test_sure_and_right_scores_zero_and_sure_and_wrong_scores_one() -> None:
    assert calibrate([Scored(confidence=1.0, correct=True)]).brier == 0.0
    assert calibrate([Scored(confidence=1.0, correct=False)]).brier == 1.0
    empty = calibrate([])
    assert empty.brier is None and all(b.cases == 0 and b.accuracy is None for b in empty.bins)


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory) -> Path:
    """Two failure cases, a latency case and a latency case whose answer is `unknown`."""
    root = tmp_path_factory.mktemp("tiny")
    picks = [*sorted(suite_dir("failure").glob("*/expected.json"))[:2],
             next(suite_dir("latency").glob("l01*/expected.json")),
             next(p for p in sorted(suite_dir("latency").glob("*/expected.json"))
                  if json.loads(p.read_text())["category"] == "unknown")]
    for p in picks:
        shutil.copytree(p.parent, root / p.parent.name)
    return root


def test_a_tiny_real_run_is_scored_for_calibration(tiny_suite) -> None:
    scores = score_suite(tiny_suite)
    assert len(scores.cases) == 4
    unknown = [c for c in scores.cases if c.expected_category == "unknown"]
    assert unknown and unknown[0].category_ok  # `unknown` is right when the answer is unknown
    by_hand = sum((c.confidence - c.category_ok) ** 2 for c in scores.cases) / 4
    assert scores.brier == pytest.approx(by_hand)
    assert sum(b.cases for b in scores.reliability) == 4
    # a suite of two kinds: each kind's own Brier and table, over its own cases
    assert set(scores.brier_by_kind) == {"failure", "latency"}
    for kind, brier in scores.brier_by_kind.items():
        mine = [c for c in scores.cases if c.kind == kind]
        assert brier == pytest.approx(sum((c.confidence - c.category_ok) ** 2 for c in mine)
                                      / len(mine))
        assert sum(b.cases for b in scores.reliability_by_kind[kind]) == len(mine) == 2
    for b in scores.reliability:
        mine = [c for c in scores.cases if b.low <= c.confidence < b.high or
                b.high == 1.0 and c.confidence == 1.0]
        assert b.cases == len(mine)


def test_eval_prints_and_emits_the_reliability_table(tiny_suite) -> None:
    text = CliRunner().invoke(cli, ["eval", "--cases", str(tiny_suite)])
    assert text.exit_code == 0, text.output
    assert "Reliability" in text.output and "Brier score" in text.output
    assert "Reliability of the latency verdicts (2 cases)" in text.output
    assert "Confusion" in text.output and "culprit rank accuracy" in text.output  # kept
    out = CliRunner().invoke(cli, ["eval", "--cases", str(tiny_suite), "--json"])
    data = json.loads(out.stdout)["cases"]
    assert 0.0 <= data["brier"] <= 1.0 and len(data["reliability"]) == 5
    assert {"low", "high", "cases", "mean_confidence", "accuracy"} <= set(data["reliability"][0])
