"""Time windows as people type them on the command line: `6h`, `90m`, `10:00-11:00`,
`2026-12-02T10:00Z/2026-12-02T11:00Z`. Wall-clock times without a date mean the given day
(default: today) in the given zone (default: UTC)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, model_validator

from goodput_agent.core.errors import BadInput


class TimeWindow(BaseModel):
    start: datetime  # timezone-aware UTC
    end: datetime

    @model_validator(mode="after")
    def _ordered(self) -> TimeWindow:
        if self.end <= self.start:
            raise ValueError("window end must be after its start")
        return self

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_CLOCK = re.compile(r"^\d{1,2}:\d{2}(:\d{2})?$")


def parse_duration(text: str) -> timedelta:
    m = _DURATION.match(text)
    if not m:
        raise BadInput(f"{text!r}: not a duration (write e.g. 30m, 6h, 2d)")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


def zone(name: str | None) -> ZoneInfo | type[UTC] | None:
    if not name or name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInput(f"{name!r}: unknown time zone (write e.g. UTC, Europe/Berlin)") from None


def _instant(text: str, day: date, tz) -> datetime:  # noqa: ANN001 - a tzinfo
    text = text.strip()
    if _CLOCK.match(text):
        return datetime.combine(day, time.fromisoformat(text.zfill(5)), tz).astimezone(UTC)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{text!r}: not a time (write HH:MM or an ISO 8601 time)") from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=tz)).astimezone(UTC)


def parse_window(text: str, day: date | None = None, tz_name: str | None = None) -> TimeWindow:
    """`10:00-11:00`, `23:30-00:30` (crosses midnight), or `START/END` in ISO 8601."""
    tz = zone(tz_name)
    day = day or datetime.now(tz).date()
    if "/" in text:
        start_s, _, end_s = text.partition("/")
    elif text.count("-") == 1 and all(_CLOCK.match(p.strip()) for p in text.split("-")):
        start_s, _, end_s = text.partition("-")
    else:
        raise BadInput(f"{text!r}: not a window (write 10:00-11:00 or START/END in ISO 8601)")
    start, end = _instant(start_s, day, tz), _instant(end_s, day, tz)
    if end <= start and _CLOCK.match(end_s.strip()):
        end += timedelta(days=1)
    if end <= start:
        raise BadInput(f"{text!r}: the window ends before it starts")
    return TimeWindow(start=start, end=end)


def since(duration: str, now: datetime | None = None) -> TimeWindow:
    end = now or datetime.now(UTC)
    return TimeWindow(start=end - parse_duration(duration), end=end)


def looking_back(text: str, now: datetime | None = None, tz_name: str | None = None
                 ) -> TimeWindow:
    """`6h` (the last six hours) or a window in parse_window's forms."""
    if _DURATION.match(text):
        return since(text, now)
    return parse_window(text, tz_name=tz_name)


def rfc3339(value: Any) -> datetime | None:
    """An API's RFC 3339 time (Kubernetes, Prometheus: `2026-12-04T05:00:00Z`), timezone-aware;
    None when it is absent or not one (naive times are taken as UTC)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)
