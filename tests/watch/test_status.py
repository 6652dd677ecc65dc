"""`goodput watch status` says whether the watch runs (it said it stopped, its process is gone
without saying so, it ran once), counts only the sources the latest run watches (an earlier
run's source is not "down" forever), and lists each failed incident with why."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.watch import WatchQueue, WatchRun
from goodput_agent.watch.runner import Watch, WatchOptions
from goodput_agent.watch.status import SourceHealth, liveness, read_status
from tests.watch.fakes import ListSource, RecordingInvestigation, job_trigger


def _watch(path: Path, sources: list[ListSource], fail: set[str] | None = None) -> None:
    with Ledger(path) as led:
        Watch(led, sources, RecordingInvestigation(fail_keys=fail),
              WatchOptions(tick_s=0.01, max_attempts=1)).run(once=True)


def status(path: Path, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["watch", "status", "--ledger", str(path), *args],
                           env={"COLUMNS": "120"})
    return r.exit_code, r.stdout


def test_an_earlier_runs_source_is_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    k8s = ListSource([], name="kubernetes")
    k8s.down = True
    _watch(path, [ListSource([job_trigger(1)]), k8s])
    assert status(path)[0] == 4  # that run's kubernetes source was down
    _watch(path, [ListSource([job_trigger(2)])])  # the next run watches Slurm alone
    code, text = status(path, "--json")
    assert code == 0
    assert [s["source"] for s in json.loads(text)["sources"]] == ["slurm"]


def test_a_finished_or_killed_watch_is_not_shown_running(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    _watch(path, [ListSource([job_trigger(1)])])
    code, text = status(path)
    assert code == 0 and "watch: ran once, finished at" in text and "(at its last poll)" in text
    st = read_status(path)
    assert st is not None and st.running is False and st.watch and st.watch.sources == ["slurm"]
    gone = WatchRun(pid=2**22 + 12345, host=__import__("socket").gethostname(),  # no such pid
                    started_at=datetime.now(UTC), interval_s=30, sources=["slurm"])
    with Ledger(path) as led:
        WatchQueue(led).record_start(gone)
    code, text = status(path)
    assert "not running: process" in text and "killed?" in text
    assert read_status(path).running is False  # type: ignore[union-attr]


def test_a_watch_on_another_host_is_judged_by_its_polls() -> None:
    now = datetime(2026, 12, 4, 12, tzinfo=UTC)
    run = WatchRun(pid=1, host="elsewhere.example", started_at=now - timedelta(hours=1),
                   interval_s=30, sources=["slurm"])
    polled = [SourceHealth(source="slurm", ok=True, last_poll_at=now - timedelta(seconds=40))]
    assert liveness(run, polled, now)[0] is True
    late = [SourceHealth(source="slurm", ok=True, last_poll_at=now - timedelta(minutes=10))]
    running, said = liveness(run, late, now)
    assert running is False and "not heard from on elsewhere.example" in said


def test_failed_incidents_are_listed_with_why(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    bad = job_trigger(7)
    _watch(path, [ListSource([job_trigger(6), bad])], fail={bad.key})
    code, text = status(path)
    assert "failed 1" in text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("failed: ")]
    assert "slurm failure 7 after 1 attempts" in line
