"""Structured logs with structlog: JSON lines when stderr is not a terminal (or asked for), and
on a terminal one short human line each (`goodput: warning: what happened (key=value, ...)`)."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

from goodput_agent.core.untrusted import visible


def visible_values(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:  # noqa: ANN401
    """Log values quote bundles (a file name, a parse error): on a terminal each is one line
    with its control characters shown, never obeyed. (JSON logs escape them already.)"""
    return {k: visible(v, newlines=False) if isinstance(v, str) else v
            for k, v in event.items()}


def human_line(_logger: Any, _name: str, event: dict[str, Any]) -> str:  # noqa: ANN401
    """`goodput: warning: messages retry (attempt=1, wait_s=1.6, error=APIConnectionError)`:
    the event's name in words, its values after it, no timestamp."""
    what = str(event.pop("event", "")).replace("_", " ")
    level = event.pop("level", "info")
    event.pop("timestamp", None)
    rest = ", ".join(f"{k}={v}" for k, v in event.items() if v is not None)
    return f"goodput: {level}: {what}" + (f" ({rest})" if rest else "")


def configure(level: str = "warning", json_logs: bool | None = None) -> None:
    if json_logs is None:
        json_logs = not sys.stderr.isatty()
    renderers = ([structlog.processors.TimeStamper(fmt="iso", utc=True),
                  structlog.processors.JSONRenderer()] if json_logs
                 else [visible_values, human_line])
    structlog.configure(
        processors=[structlog.processors.add_log_level, *renderers],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
