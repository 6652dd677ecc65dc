"""The torch profiler's key_averages() table, read by its dashed rule's column spans: every
unit, names with spaces, a header that spills past its rule, several tables in one file."""

from __future__ import annotations

from goodput_agent.parsing.profile_table import profile_tables

HEADER = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
          "# of Calls")


def table(rows: list[tuple[str, ...]], width: int = 33, header: tuple[str, ...] = HEADER) -> str:
    """A table in torch's layout (torch/autograd/profiler_util.py): right-aligned cells two
    spaces apart, a dashed rule above and below the header and at the end."""
    widths = [width] + [12] * (len(header) - 1)
    rule = "  ".join("-" * w for w in widths) + "  "

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + "  "

    return "\n".join([rule, line(header), rule, *map(line, rows), rule,
                      "Self CPU time total: 100.987ms", ""])


ROWS = [("model_inference", "8.04%", "8.119ms", "99.95%", "100.934ms", "100.934ms", "1"),
        ("aten::conv2d", "0.12%", "117.000us", "66.91%", "67.570ms", "3.378ms", "20"),
        ("Memcpy HtoD (Pageable -> Device)", "0.00%", "0.000us", "0.00%", "1.500s", "0.5s",
         "3")]


def test_times_are_read_in_ms_whatever_their_unit() -> None:
    [t] = profile_tables(table(ROWS).splitlines())
    first, conv, copy = t.rows
    assert (first.name, first.self_cpu, first.cpu_total, first.calls) == \
        ("model_inference", 8.119, 100.934, 1)
    assert (conv.self_cpu, conv.calls, conv.line) == (0.117, 20, 5)
    assert copy.name == "Memcpy HtoD (Pageable -> Device)" and copy.cpu_total == 1500.0
    assert first.self_cuda is None and t.steps == 1  # no GPU columns, no ProfilerStep row


def test_several_tables_in_one_file_are_each_read() -> None:
    slow = [(ROWS[0][0], "8.04%", "80.119ms", *ROWS[0][3:]), *ROWS[1:]]
    one = table(ROWS)
    lines = (one + "\nand the slow run:\n\n" + table(slow)).splitlines()
    tables = profile_tables(lines)
    assert [t.rows[0].self_cpu for t in tables] == [8.119, 80.119]
    assert "Self CPU %" in lines[tables[1].line - 1]  # its header's line, 1-based
    assert tables[1].rows[0].line == tables[1].line + 2


def test_a_header_that_spills_past_its_rule_still_names_the_columns() -> None:
    """A column name wider than its cells shifts the rest of the header: the names are taken
    in order, split where two spaces part them."""
    text = table(ROWS).splitlines()
    text[1] = text[1].replace("CPU time avg", "CPU time avg.") + " "
    [t] = profile_tables(text)
    assert [r.calls for r in t.rows] == [1, 20, 3]
