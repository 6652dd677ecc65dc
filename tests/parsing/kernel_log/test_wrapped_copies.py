"""A kernel log copied from a terminal arrives cut at the terminal's width, each row padded
with blanks (or not), words split across rows. Read back, every shipped case's kernel log gives
the same findings as the original, at 80 and 116 columns, padded or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.kernel_log import PARSER
from goodput_agent.parsing.lines import hard_wrap_width

CASES = Path(__file__).resolve().parents[3] / "evals" / "cases"


def _kernel_logs() -> list[Path]:
    out = []
    for path in sorted(CASES.glob("*/nodes/*/*")):
        head = path.read_text(errors="replace")[:64 * 1024]
        if PARSER.sniff(head, path.name):
            out.append(path)
    return out


def _cut(text: str, width: int, padded: bool) -> str:
    rows = []
    for line in text.splitlines():
        pieces = [line[i:i + width] for i in range(0, len(line), width)] or [""]
        rows += [p.ljust(width) if padded else p for p in pieces]
    return "\n".join(rows) + "\n"


def _findings(path: Path) -> set[tuple]:
    # what was found, where and when; how many lines one event merged can differ (the merge
    # window counts rows, and a cut copy has more of them)
    res = PARSER.parse(path, ParseContext(rel_path=f"nodes/x/{path.name}"))
    return {(e.kind, e.category, e.gpu, e.node, e.ts) for e in res.events}


LOGS = _kernel_logs()


def test_there_are_kernel_logs_with_findings_to_wrap() -> None:
    assert len(LOGS) >= 20
    assert sum(bool(_findings(p)) for p in LOGS) >= 15


@pytest.mark.parametrize(("width", "padded"), [(80, True), (116, True), (80, False)])
def test_a_copy_cut_at_a_terminals_width_reads_as_the_original(
        tmp_path: Path, width: int, padded: bool) -> None:
    for src in LOGS:
        text = src.read_text(errors="replace")
        wrapped = tmp_path / src.name
        wrapped.write_text(_cut(text, width, padded))
        if max(map(len, text.splitlines()), default=0) <= width:
            continue  # nothing was cut
        assert _findings(wrapped) == _findings(src), src


def test_a_table_of_equal_rows_is_no_wrapped_copy() -> None:
    # rows of one width that each start a line of their own are never joined (the caller's
    # `starts_a_line` decides); the width alone is only a hint
    rows = "\n".join(f"[{i:>8}.000000] usb 1-1: new device number {i:>4} using xhci_hcd xx"
                     for i in range(10))
    assert hard_wrap_width(rows) == len(rows.splitlines()[0])
