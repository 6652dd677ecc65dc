"""sinfo: node state words, the --list-reasons (-R) table and the default table."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.lines import iter_lines
from goodput_agent.parsing.slurm.outcomes import (
    build_result,
)
from goodput_agent.parsing.slurm.records import (
    NodeRecord,
    has_program_output,
    head_lines,
    mostly_slurm,
    nodes_of,
    none_if_empty,
    parse_local_time,
    row_excerpt,
    table_share,
)

_SINFO_SHORT = {
    "alloc": "ALLOCATED", "allocated": "ALLOCATED", "comp": "COMPLETING", "drain": "DRAINED",
    "drained": "DRAINED", "drng": "DRAINING", "draining": "DRAINING", "down": "DOWN",
    "fail": "FAIL", "failg": "FAILING", "failing": "FAILING", "futr": "FUTURE",
    "future": "FUTURE", "idle": "IDLE", "maint": "MAINT", "mix": "MIXED", "mixed": "MIXED",
    "npc": "PERFCTRS", "plnd": "PLANNED", "planned": "PLANNED", "pow_dn": "POWER_DOWN",
    "pow_up": "POWERING_UP", "resv": "RESERVED", "reserved": "RESERVED", "unk": "UNKNOWN",
    "unknown": "UNKNOWN", "inval": "INVAL", "boot": "REBOOT_ISSUED", "blocked": "BLOCKED",
}
STATE_ALIASES = {"NO_RESPOND": "NOT_RESPONDING", "ALLOC": "ALLOCATED", "MIX": "MIXED",
                  "DRNG": "DRAINING", "COMP": "COMPLETING"}
_SINFO_SUFFIX = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP",
                 "%": "POWERING_DOWN", "!": "POWER_DOWN", "$": "MAINT", "@": "REBOOT_REQUESTED",
                 "^": "REBOOT_ISSUED", "-": "PLANNED"}


def parse_node_states(text: str | None) -> list[str]:
    """"DOWN+DRAIN+NOT_RESPONDING" or sinfo's "drng@" / "down*" -> upper-case state flags."""
    if not text:
        return []
    out: list[str] = []
    for part in re.split(r"[+\s]+", text.strip()):
        flags = []
        while part and part[-1] in _SINFO_SUFFIX:
            flags.append(_SINFO_SUFFIX[part[-1]])
            part = part[:-1]
        if not part:
            base = None
        elif part.isupper():  # scontrol / JSON spelling: "IDLE+DRAIN", "NO_RESPOND"
            base = STATE_ALIASES.get(part, part)
        else:  # sinfo's short lower-case spelling: "drng", "alloc"
            base = _SINFO_SHORT.get(part.lower(), part.upper())
        for state in ([base] if base else []) + flags:
            if state not in out:
                out.append(state)
    return out


def _sinfo_clean(line: str) -> str:
    """sinfo lines as some CI logs print them: inside JSON quotes, with a trailing comma."""
    text = line.strip()
    if text.startswith('"'):
        text = text[1:]
        text = re.sub(r'",?\s*$', "", text)
    return text.rstrip(",").strip()


_HOSTLIST = re.compile(r"^[A-Za-z0-9][\w.\-\[\],]*$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")


def _sinfo_reason_header(text: str) -> list[str] | None:
    tokens = text.split()
    if tokens and tokens[0] == "REASON" and "NODELIST" in tokens:
        return tokens
    return None


class _Table:
    """The rows of an sinfo table, cleaned, each with the header line above it; after the walk,
    `header` is the last header seen (None: there was none) and `lines` the file's lines."""

    def __init__(self, path: Path, header_of: Callable[[str], list[str] | None]):
        self.path, self.header_of = path, header_of
        self.header: list[str] | None = None
        self.lines = 0

    def rows(self) -> Iterator[tuple[int, str, str, list[str]]]:
        for n, line in iter_lines(self.path):
            self.lines = n
            text = _sinfo_clean(line)
            found = self.header_of(text)
            if found:
                self.header = found
                continue
            if self.header is None or not text:
                continue
            yield n, line, text, self.header


class SinfoReasonsParser:
    format = "sinfo_reasons"

    def sniff(self, head: str, name: str) -> bool:
        if has_program_output(head):
            return False
        lines = head_lines(head)
        for i in range(min(len(lines), 40)):
            header = _sinfo_reason_header(_sinfo_clean(lines[i]))
            if header and mostly_slurm(lines, table_share(
                    lines, i, lambda ln, h=header: self._row_fields(_sinfo_clean(ln), h)
                    is not None)):
                return True
        return False

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        table = _Table(path, _sinfo_reason_header)
        nodes = [record for n, line, text, header in table.rows()
                 if (record := self._row(text, header, n, line, ctx))]
        if table.header is None:
            raise ParseError(f"{ctx.rel_path}: no sinfo -R header (REASON ... NODELIST) found")
        return build_result(self.format, ctx, [], nodes, table.lines)

    @staticmethod
    def _row_fields(text: str, header: list[str]) -> dict[str, str] | None:
        """The columns of one sinfo -R row (REASON may hold spaces); None when it is not one."""
        tokens = text.split()
        if len(tokens) < len(header):
            return None
        values: dict[str, str] = {}
        for col in reversed(header[1:]):
            values[col] = tokens.pop()
        values["REASON"] = " ".join(tokens)
        stamp = values.get("TIMESTAMP")
        if not values["REASON"] or not _HOSTLIST.match(values["NODELIST"]):
            return None
        if stamp is not None and not (_TIMESTAMP.match(stamp) or stamp in ("Unknown", "None")):
            return None  # a line of some other table
        return values

    def _row(self, text: str, header: list[str], n: int, line: str,
             ctx: ParseContext) -> NodeRecord | None:
        values = self._row_fields(text, header)
        if values is None:
            return None
        reason, stamp = values["REASON"], values.get("TIMESTAMP")
        names = nodes_of(values["NODELIST"])
        if not names:
            return None
        ts, clock = parse_local_time(stamp, ctx)
        return NodeRecord(names=names, states=parse_node_states(values.get("STATE")), line_start=n,
                          line_end=n, excerpt=row_excerpt(line.strip()), reason=reason,
                          reason_user=values.get("USER"), reason_time=ts, reason_clock=clock)


def _sinfo_header(text: str) -> list[str] | None:
    tokens = text.split()
    upper = set(tokens)
    if "STATE" in upper and ("PARTITION" in upper or "NODELIST" in upper) and \
            ("NODELIST" in upper or "HOSTNAMES" in upper) and all(t.isupper() or "(" in t
                                                                 for t in tokens):
        return tokens
    return None


_KNOWN_NODE_WORDS = set(_SINFO_SHORT) | {"drain", "down", "idle", "maint", "reboot", "power_down",
                                       "powering_down", "powering_up", "powered_down"}


def _sinfo_row(text: str, header: list[str]) -> dict[str, str] | None:
    """One row of a plain sinfo table, checked: a known STATE and a host list."""
    tokens = text.split()
    if len(tokens) > len(header) and header[-1] == "REASON":
        tokens = tokens[:len(header) - 1] + [" ".join(tokens[len(header) - 1:])]
    if len(tokens) != len(header):
        return None
    row = dict(zip(header, tokens, strict=True))
    hostlist = row.get("NODELIST") or row.get("HOSTNAMES") or ""
    state = row.get("STATE", "").rstrip("".join(_SINFO_SUFFIX)).lower()
    if not _HOSTLIST.match(hostlist) or state not in _KNOWN_NODE_WORDS:
        return None
    return row


class SinfoParser:
    format = "sinfo"

    def sniff(self, head: str, name: str) -> bool:
        if has_program_output(head):
            return False
        lines = head_lines(head)
        for i in range(min(len(lines), 60)):
            header = _sinfo_header(_sinfo_clean(lines[i]))
            if header and "PARTITION" in header and mostly_slurm(lines, table_share(
                    lines, i, lambda ln, h=header: _sinfo_row(_sinfo_clean(ln), h) is not None)):
                return True
        return False

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        table = _Table(path, _sinfo_header)
        nodes: list[NodeRecord] = []
        for n, line, text, header in table.rows():
            row = _sinfo_row(text, header)
            if row is None:
                continue
            names = nodes_of(row.get("NODELIST") or row.get("HOSTNAMES"))
            states = parse_node_states(row.get("STATE"))
            if not names or not states:
                continue
            nodes.append(NodeRecord(
                names=names, states=states, line_start=n, line_end=n,
                excerpt=row_excerpt(line.strip()), reason=none_if_empty(row.get("REASON")),
                extra={k.lower(): v for k, v in row.items() if k in ("PARTITION", "AVAIL")}))
        if table.header is None:
            raise ParseError(f"{ctx.rel_path}: no sinfo header (PARTITION ... STATE ...) found")
        return build_result(self.format, ctx, [], nodes, table.lines)
