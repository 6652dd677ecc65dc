import random

import pytest

from goodput_agent.parsing import prefilter
from goodput_agent.parsing.lines import LineCount, scan_lines
from goodput_agent.parsing.prefilter import Prefilter

MARKERS = (b"NCCL", b"rror", b"Xid", b"Traceback")


def _expected(buf: bytes, markers: tuple[bytes, ...]) -> list[int]:
    out, start = [], 0
    for line in buf.split(b"\n"):
        if any(m in line for m in markers):
            out.append(start)
        start += len(line) + 1
    return out


ENGINES = ["find"] + (["hyperscan"] if prefilter.hyperscan is not None else [])


@pytest.mark.parametrize("engine", ENGINES)
def test_each_marked_line_once_in_order(engine: str) -> None:
    buf = (b"NCCL at start NCCL twice rror\nplain\n\nXid 79 Traceback\nno marker here\n"
           b"tail rror")  # a marker on the first line, twice in a line, on the last line
    assert Prefilter(MARKERS, engine=engine).line_starts(buf) == _expected(buf, MARKERS)


@pytest.mark.parametrize("engine", ENGINES)
def test_random_text_matches_the_plain_definition(engine: str) -> None:
    rng = random.Random(7)
    words = [b"alpha", b"NCCL", b"beta", b"Error", b"x", b"Xi", b"d", b"\n", b"\n", b" "]
    pf = Prefilter(MARKERS, engine=engine)
    for _ in range(50):
        buf = b"".join(rng.choice(words) for _ in range(rng.randint(0, 400)))
        assert pf.line_starts(buf) == _expected(buf, MARKERS)


def test_engines_agree() -> None:
    if prefilter.hyperscan is None:
        pytest.skip("hyperscan is not installed here")
    rng = random.Random(3)
    buf = b"".join(rng.choice([b"NCCL WARN x\n", b"loss 1.0\n", b"RuntimeError: y\n", b"z"])
                   for _ in range(5000))
    assert Prefilter(MARKERS, engine="hyperscan").line_starts(buf) == \
        Prefilter(MARKERS, engine="find").line_starts(buf)


def test_bad_markers_are_refused() -> None:
    with pytest.raises(ValueError):
        Prefilter((b"a\nb",))
    with pytest.raises(ValueError):
        Prefilter(())


def test_scan_lines_counts_the_file_lines(tmp_path) -> None:
    p = tmp_path / "k.log"
    p.write_bytes(b"a\nXid 1\nb\nc")  # no final newline: four lines
    count = LineCount()
    assert list(scan_lines(p, [b"Xid"], count)) == [(2, "Xid 1")]
    assert count.lines == 4
    p.write_bytes(b"a\nb\n")
    assert list(scan_lines(p, [b"Xid"], count)) == [] and count.lines == 2


@pytest.mark.parametrize("chunk", [64, 1000, 1 << 20])
def test_job_log_scan_numbers_lines_exactly_across_chunks(tmp_path, monkeypatch,
                                                          chunk: int) -> None:
    from goodput_agent.parsing.job_log import scan as job_log

    monkeypatch.setattr(job_log, "CHUNK_BYTES", chunk)
    rng = random.Random(chunk)
    pool = ["2024-05-01 10:00:00,000 INFO step 3 loss 1.0", "plain text", "",
            "[rank1]: NCCL WARN x", "RuntimeError: boom", "  at frame"]
    lines = [rng.choice(pool) for _ in range(3000)]
    p = tmp_path / "rank1.log"
    p.write_text("\n".join(lines))  # no final newline
    st = job_log.ScanState()
    seen = {n: text for n, text, _ in job_log.scan_with_times(p, st) if text is not None}
    assert all(lines[n - 1] == text for n, text in seen.items())
    marked = {i + 1 for i, ln in enumerate(lines) if any(m.decode() in ln for m in
                                                        job_log.MARKERS)}
    assert marked and marked <= set(seen)
    assert st.lines == len(lines)
