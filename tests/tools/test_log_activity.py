"""log_activity's progress scan: the last line that shows training work, read from the end."""

from datetime import UTC, datetime
from pathlib import Path

from goodput_agent.parsing.timefmt import ClockPolicy
from tools.log_activity import PROGRESS_SCAN_BYTES, TAIL_BYTES, last_progress

POLICY = ClockPolicy(tz_name="UTC", year=2024)


def test_the_last_step_line_is_found_behind_a_long_failure_burst(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    steps = [f"[default0]:2024-05-01 10:{m:02d}:00,000 INFO trainer.py:206 step {100 + m} | "
             "loss 1.5" for m in range(10)]
    # a burst of error lines larger than one tail chunk, which mention steps and losses too
    burst = [f"[rank{r}]:[E0501 10:20:{r % 60:02d}.000000 ProcessGroupNCCL.cpp:1595] Watchdog "
             f"caught collective operation timeout at step {r}" for r in range(3000)]
    log.write_text("\n".join(steps + burst) + "\n")
    assert log.stat().st_size > TAIL_BYTES
    assert last_progress(log, POLICY) == (datetime(2024, 5, 1, 10, 9, tzinfo=UTC), 109)


def test_a_log_without_progress_lines_has_none(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("".join(f"2024-05-01 10:00:{s:02d},000 INFO loading shard {s}\n"
                           for s in range(60)))
    assert last_progress(log, POLICY) == (None, None)


def test_the_scan_stops_after_a_bounded_read(tmp_path: Path) -> None:
    # a step line 8 MB from the end is past the scan's budget: the tool never reads that far
    log = tmp_path / "big.log"
    line = "2024-05-01 10:00:00,000 INFO nothing to see here " + "x" * 60 + "\n"
    filler = line * (8 * 1024 * 1024 // len(line))
    log.write_text("2024-05-01 09:00:00,000 INFO step 7 | loss 2.0\n" + filler)
    assert log.stat().st_size > PROGRESS_SCAN_BYTES
    assert last_progress(log, POLICY) == (None, None)
    log.write_text("2024-05-01 09:00:00,000 INFO step 7 | loss 2.0\n" + line * 10)
    assert last_progress(log, POLICY) == (datetime(2024, 5, 1, 9, tzinfo=UTC), 7)


def test_first_and_last_times_found_past_the_first_few_kilobytes(tmp_path: Path) -> None:
    from tools.log_activity import EDGE_BYTES, _edges

    log = tmp_path / "train.log"
    banner = "".join(f"banner line {i} without any time at all\n" for i in range(400))
    assert len(banner) > EDGE_BYTES
    # a time cut by the first read's edge must not count: only whole lines are read there
    log.write_text(banner + "2024-05-01 10:00:00,000 INFO start\n"
                   "2024-05-01 10:30:00,000 INFO end\n" + banner)
    assert _edges(log, POLICY) == (datetime(2024, 5, 1, 10, 0, tzinfo=UTC),
                                   datetime(2024, 5, 1, 10, 30, tzinfo=UTC))
    pad = "x" * (EDGE_BYTES - 10) + "\n"  # the first read ends inside the timestamped line
    log.write_text(pad + "2024-05-01 11:00:00,000 INFO start\n")
    assert _edges(log, POLICY)[0] == datetime(2024, 5, 1, 11, 0, tzinfo=UTC)
