"""`goodput check --prometheus URL --job-selector ... --step-metric ...` against a real
Prometheus (Debian's package) holding a job's step counter, backfilled as scraped every 15 s:
the counter going flat while its samples keep coming is a stall; samples that stop are a gap,
not a stall; bad selectors are one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from goodput_agent.core.errors import BadInput
from goodput_agent.detect.check import CheckOptions, check_prometheus_job
from goodput_agent.ledger import Ledger
from tests.servers.prometheus import prometheus_over_text

T0 = 1_796_000_000.0  # a fixed past hour: the series are backfilled


def counter(flat_from: float | None, stop_at: float) -> str:
    lines = ["# TYPE train_step gauge"]
    step, t = 0, T0
    while t <= stop_at:
        if flat_from is None or t < flat_from:
            step += 15  # a step a second
        for host in ("n1", "n2"):
            lines.append(f'train_step{{job="llama",Hostname="{host}"}} {step} {t:.3f}')
        t += 15
    return "\n".join(lines) + "\n# EOF\n"


def test_flat_counter_is_a_stall_and_a_gap_is_not(tmp_path: Path) -> None:
    end = T0 + 1800
    text = counter(flat_from=end - 180, stop_at=end)
    with prometheus_over_text(tmp_path, text) as url, Ledger(tmp_path / "l.duckdb") as lg:
        opts = CheckOptions(prometheus_url=url, timeout_s=20)
        hung = check_prometheus_job('job="llama"', "train_step", lg, opts, now=end)
        gap = check_prometheus_job('job="llama"', "train_step", lg, opts, now=end + 300)
        healthy = check_prometheus_job('job="llama"', "train_step", lg, opts, now=end - 200)
    f = hung.finding
    assert f.kind == "hang" and 170 <= f.stall.silent_s <= 195 and f.rank is None
    assert "culprit unknown" in f.summary
    assert hung.report.root_cause.evidence[0].locator.startswith("prometheus [train_step{")
    assert gap.finding.kind == "unknown" and "missing data, not a stall" in gap.finding.summary
    assert healthy.finding.kind == "healthy"


def test_bad_selectors_are_one_line(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.duckdb") as lg:
        opts = CheckOptions(prometheus_url="http://127.0.0.1:9", timeout_s=1)
        with pytest.raises(BadInput, match="--job-selector"):
            check_prometheus_job('job="x"}) or vector(1', "train_step", lg, opts)
        with pytest.raises(BadInput, match="--step-metric"):
            check_prometheus_job('job="x"', "a b", lg, opts)
    out = subprocess.run([sys.executable, "-m", "goodput_agent.cli", "check", "--job-selector",
                          'job="x"', "--ledger", str(tmp_path / "l.duckdb")],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2 and "--prometheus URL and --step-metric" in out.stderr
