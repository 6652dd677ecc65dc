"""Which parser reads which file: formats are identified by content, in a fixed order.

Adding a format means adding a parser module and listing it here; nothing else changes.
"""

from __future__ import annotations

from functools import cache

from goodput_agent.parsing.base import Parser


@cache
def parsers() -> tuple[Parser, ...]:
    from goodput_agent.parsing import (
        flight_recorder,
        job_log,
        k8s,
        kernel_log,
        kineto,
        openmetrics,
        slurm,
        torchelastic,
    )

    # Structured formats first (they are unambiguous), free-text logs last.
    return (
        *slurm.PARSERS,
        k8s.PARSER,
        torchelastic.PARSER,
        flight_recorder.PARSER,
        kineto.PARSER,
        *openmetrics.PARSERS,
        kernel_log.PARSER,
        job_log.PARSER,
    )


def identify(head: str, name: str) -> Parser | None:
    for parser in parsers():
        try:
            if parser.sniff(head, name):
                return parser
        except Exception:  # a sniffer must never take the scan down  # noqa: BLE001
            continue
    return None
