"""PyTorch profiler (Kineto) Chrome-trace JSON: identified here; analysed by the slowdown tools.

For the failure question only the trace's identity matters (rank, world size, host), read from
the head of the file so that a 1 GB trace costs nothing to list.
"""

from __future__ import annotations

import re
from pathlib import Path

from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.lines import read_head

_RANK = re.compile(r'"distributedInfo"\s*:\s*\{[^}]*?"rank"\s*:\s*(\d+)')
_WORLD = re.compile(r'"distributedInfo"\s*:\s*\{[^}]*?"world_size"\s*:\s*(\d+)')


class KinetoTraceParser:
    format = "kineto_trace"

    def sniff(self, head: str, name: str) -> bool:
        start = head.lstrip()[:1]
        return start == "{" and ('"traceEvents"' in head or '"schemaVersion"' in head and
                                 '"deviceProperties"' in head)

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        head = read_head(path, 4 * 1024 * 1024).decode("utf-8", errors="replace")
        facts: dict[str, object] = {}
        if m := _RANK.search(head):
            facts["rank"] = int(m.group(1))
        if m := _WORLD.search(head):
            facts["world_size"] = int(m.group(1))
        return ParseResult(format=self.format, facts=facts)


PARSER = KinetoTraceParser()
