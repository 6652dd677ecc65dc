"""Progress from a job's own log: steps with their times and line numbers, announced phases,
error lines never progress; read again, only what was appended is read."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.detect.progress import ProgressCache, read_progress

LINES = [
    "2026-12-04T10:00:00.000Z building model",
    "2026-12-04T10:00:01.000Z iteration 1 | loss 2.5",
    "2026-12-04T10:00:02,5 iteration 2 | loss 2.4",  # a zone-less stamp with a comma
    "[2026-12-04 10:00:03] saving checkpoint at iteration 2 to /ckpt",
    "[2026-12-04 10:00:30] successfully saved checkpoint at iteration 2",
    "2026-12-04T10:00:31Z iteration 3 | loss 2.3",
    "2026-12-04T10:00:32Z step 4 failed: CUDA error",  # an error line: not progress
    "no time on this line: iteration 99",
    "2026-12-04T10:00:33.123456789Z Running evaluation at iteration 4",
]


def test_marks_phases_and_what_is_not_progress(tmp_path: Path) -> None:
    path = tmp_path / "job.out"
    path.write_text("\n".join(LINES) + "\n")
    log = read_progress(path)
    assert [(m.step, m.line) for m in log.marks] == [(1, 2), (2, 3), (3, 6)]
    assert log.marks[1].t - log.marks[0].t == 1.5
    (ckpt, ev) = log.phases
    assert (ckpt.kind, ckpt.end - ckpt.start) == ("checkpoint", 27.0)
    assert ev.kind == "eval" and ev.end is None and log.phase_lines == [4, 9]


def test_the_cache_reads_only_what_was_appended(tmp_path: Path) -> None:
    path = tmp_path / "job.out"
    path.write_text("\n".join(LINES[:3]) + "\n")
    cache = ProgressCache()
    first = cache.read(path)
    assert [m.step for m in first.marks] == [1, 2]
    with path.open("a") as fh:
        fh.write("\n".join(LINES[3:6]) + "\n" + "2026-12-04T10:00:40Z iteration 5 | lo")
    again = cache.read(path)
    assert [(m.step, m.line) for m in again.marks] == [(1, 2), (2, 3), (3, 6)]
    assert again.phases[0].end is not None  # the save seen across two reads
    with path.open("a") as fh:
        fh.write("ss 2.2\n")  # the line being written is read once it ends
    assert [(m.step, m.line) for m in cache.read(path).marks][-1] == (5, 7)
    path.write_text(LINES[1] + "\n")  # replaced (a requeued job's new output)
    assert [m.step for m in cache.read(path).marks] == [1]
