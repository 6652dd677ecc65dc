"""Structured logs with structlog: JSON when stderr is not a terminal, readable when it is."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

from goodput_agent.untrusted import visible


def visible_values(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:  # noqa: ANN401
    """Log values quote bundles (a file name, a parse error): on a terminal each is one line
    with its control characters shown, never obeyed. (JSON logs escape them already.)"""
    return {k: visible(v, newlines=False) if isinstance(v, str) else v
            for k, v in event.items()}


def configure(level: str = "warning", json_logs: bool | None = None) -> None:
    if json_logs is None:
        json_logs = not sys.stderr.isatty()
    renderers = ([structlog.processors.JSONRenderer()] if json_logs
                 else [visible_values, structlog.dev.ConsoleRenderer(colors=False)])
    structlog.configure(
        processors=[structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso", utc=True), *renderers],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
