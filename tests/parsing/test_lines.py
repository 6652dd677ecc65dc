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


def test_rows_of_one_width_are_cut_only_where_the_next_row_continues_them() -> None:
    """A terminal's cut is a full row continued by the next; repeated messages of one length,
    each starting a line, are no cut (and their file keeps the prefilter's pace)."""
    from goodput_agent.parsing.lines import cut_rows_continue

    def starts(row: str) -> bool:
        return row.startswith("[")

    equal = "\n".join(f"[{i:>8}.000000] audit: type=1400 op=open name=/proc/{i:04d}/stat"
                      for i in range(12))
    width = len(equal.splitlines()[0])
    assert not cut_rows_continue(equal, width, starts)
    cut = equal.splitlines()
    cut[5] = cut[5][: width - 10]
    xid = "[       5.000000] NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=python, GPU"
    cut.insert(5, xid[:width])
    cut.insert(6, " has fallen off the bus.")
    assert cut_rows_continue("\n".join(cut), width, starts)
