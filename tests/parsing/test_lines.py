import gzip
from pathlib import Path

from goodput_agent.parsing import lines
from goodput_agent.parsing.lines import MAX_LINE_CHARS, iter_lines, scan_lines


def test_scan_lines_finds_marked_lines_with_exact_numbers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(lines, "CHUNK_BYTES", 64)  # force many chunk boundaries
    body = [f"line {i} ok" if i % 7 else f"line {i} NCCL WARN x" for i in range(1, 200)]
    p = tmp_path / "a.log"
    p.write_text("\n".join(body) + "\n")
    got = list(scan_lines(p, [b"NCCL"]))
    assert got == [(i, f"line {i} NCCL WARN x") for i in range(1, 200) if i % 7 == 0]


def test_scan_lines_without_final_newline_and_gz(tmp_path: Path) -> None:
    p = tmp_path / "b.log.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("a\nb Xid\nc\nd Xid")
    assert list(scan_lines(p, [b"Xid"])) == [(2, "b Xid"), (4, "d Xid")]


def test_over_long_line_is_cut_not_loaded(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    p.write_bytes(b"x" * (10 * 1024 * 1024) + b"\nsecond\n")
    got = list(iter_lines(p))
    assert len(got) == 2
    assert len(got[0][1]) == MAX_LINE_CHARS
    assert got[1] == (2, "second")


def test_ansi_colour_codes_are_stripped(tmp_path: Path) -> None:
    p = tmp_path / "c.log"
    p.write_bytes(b"\x1b[31mERROR\x1b[0m NCCL WARN x\n\x1b[2Kplain\n")
    assert list(scan_lines(p, [b"NCCL"])) == [(1, "ERROR NCCL WARN x")]
    assert [t for _, t in iter_lines(p)] == ["ERROR NCCL WARN x", "plain"]
