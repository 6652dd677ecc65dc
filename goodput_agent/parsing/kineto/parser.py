"""PyTorch profiler (Kineto) Chrome-trace JSON: identified here; loaded by parsing/kineto/load.py
for the slowdown tools.

For the failure question only the trace's identity matters (rank, world size, host), read from
the head of the file so that a 1 GB trace costs nothing to list: the top-level keys before
`traceEvents` (all of them when the file fits in the head) and the file name, by the same rules
as the loader (load.trace_meta).
"""

from __future__ import annotations

from pathlib import Path

from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.kineto.file_bytes import head_keys
from goodput_agent.parsing.kineto.meta import trace_meta
from goodput_agent.parsing.lines import read_head

HEAD_BYTES = 4 * 1024 * 1024


class KinetoTraceParser:
    format = "kineto_trace"

    def sniff(self, head: str, name: str) -> bool:
        start = head.lstrip()[:1]
        return start == "{" and ('"traceEvents"' in head or '"schemaVersion"' in head and
                                 '"deviceProperties"' in head)

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        head = read_head(path, HEAD_BYTES)
        meta = trace_meta(head_keys(head, whole=len(head) < HEAD_BYTES), ctx.rel_path,
                          ctx.node_hint)
        facts = {key: value for key, value in (
            ("rank", meta.rank), ("world_size", meta.world_size), ("host", meta.host),
            ("host_source", meta.host_source), ("backend", meta.backend),
        ) if value is not None}
        return ParseResult(format=self.format, facts=facts)


PARSER = KinetoTraceParser()
