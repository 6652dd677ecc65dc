"""Timestamps as the systems print them, placed on one UTC clock.

Assumptions (reported with every investigation): wall-clock times without a zone are in the
bundle's zone (incident.yaml `timezone`, default UTC); times without a year take the bundle's
year; dmesg uptime seconds need a boot anchor, else they stay unplaced (Clock.none).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache, lru_cache
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict

from goodput_agent.core.events import Clock

MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)}


class ClockPolicy(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    tz_name: str = "UTC"
    year: int = datetime.now(UTC).year
    skew_tolerance_s: float = 2.0

    @property
    def tz(self) -> tzinfo:
        return UTC if self.tz_name.upper() == "UTC" else ZoneInfo(self.tz_name)

    # the incident's own time (window start): a month/day without a year is put in the year
    # that lands nearest it, so Dec 31 / Jan 1 incidents keep their order
    anchor: datetime | None = None

    def year_for(self, month: int, day: int) -> int:
        if self.anchor is None:
            return self.year
        ref = self.anchor.replace(tzinfo=None)

        def distance(y: int) -> float:
            try:
                return abs((datetime(y, month, day) - ref).total_seconds())
            except ValueError:  # Feb 29 in a common year
                return float("inf")

        return min((self.anchor.year - 1, self.anchor.year, self.anchor.year + 1), key=distance)

    def localize(self, naive: datetime) -> datetime:
        return naive.replace(tzinfo=self.tz).astimezone(UTC)


# ISO 8601, and Go's standard logger (`2020/08/10 19:09:42`, the NVIDIA device plugin's)
_ISO = re.compile(
    r"(?P<y>\d{4})(?P<sep>[-/])(?P<mo>\d{2})(?P=sep)(?P<d>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):"
    r"(?P<s>\d{2})"
    r"(?:[.,](?P<frac>\d{1,9}))?\s?(?P<tz>Z|[+-]\d{2}:?\d{2}|UTC)?"
)
_SYSLOG = re.compile(
    r"(?P<mon>[A-Z][a-z]{2})\s+(?P<d>\d{1,2})\s+(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:\.(?P<frac>\d{1,9}))?"
)
# dmesg -T / ctime: "Sun Jan 11 09:52:01 2026"
_CTIME = re.compile(
    r"(?:[A-Z][a-z]{2}\s+)?(?P<mon>[A-Z][a-z]{2})\s+(?P<d>\d{1,2})\s+"
    r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:\.(?P<frac>\d{1,9}))?\s+(?P<y>\d{4})"
)
# glog / c10 logging: "E1122 10:15:32.123456"
_GLOG = re.compile(r"\b[IWEF](?P<mo>\d{2})(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
                   r"(?:\.(?P<frac>\d{1,9}))?")


def _micro(frac: str | None) -> int:
    return int((frac or "0")[:6].ljust(6, "0"))


@cache  # a log repeats one offset on every line
def _offset(tz: str) -> tzinfo:
    if tz in ("Z", "UTC"):
        return UTC
    sign = 1 if tz[0] == "+" else -1
    digits = tz[1:].replace(":", "")
    from datetime import timezone

    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))


@lru_cache(maxsize=4096)  # a log prints many lines within one second: one parse per stamp
def _iso_time(text: str) -> tuple[datetime, bool] | None:
    """The time in `text`, and whether it carries its offset (then it is in UTC, else naive)."""
    m = _ISO.search(text)
    if not m:
        return None
    try:
        naive = datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]),
                         int(m["s"]), _micro(m["frac"]))
    except ValueError:
        return None
    if m["tz"]:
        return naive.replace(tzinfo=_offset(m["tz"])).astimezone(UTC), True
    return naive, False


def parse_iso(text: str, policy: ClockPolicy) -> tuple[datetime, Clock] | None:
    hit = _iso_time(text)
    if hit is None:
        return None
    when, absolute = hit
    return (when, Clock.absolute) if absolute else (policy.localize(when), Clock.local)


def parse_syslog(text: str, policy: ClockPolicy) -> tuple[datetime, Clock] | None:
    m = _SYSLOG.match(text)
    if not m or m["mon"].lower() not in MONTHS:
        return None
    try:
        month = MONTHS[m["mon"].lower()]
        naive = datetime(policy.year_for(month, int(m["d"])), month, int(m["d"]), int(m["h"]),
                         int(m["mi"]), int(m["s"]), _micro(m["frac"]))
    except ValueError:
        return None
    return policy.localize(naive), Clock.inferred_year


def parse_ctime(text: str, policy: ClockPolicy) -> tuple[datetime, Clock] | None:
    m = _CTIME.search(text)
    if not m or m["mon"].lower() not in MONTHS:
        return None
    try:
        naive = datetime(int(m["y"]), MONTHS[m["mon"].lower()], int(m["d"]), int(m["h"]),
                         int(m["mi"]), int(m["s"]), _micro(m["frac"]))
    except ValueError:
        return None
    return policy.localize(naive), Clock.local


def parse_glog(text: str, policy: ClockPolicy) -> tuple[datetime, Clock] | None:
    m = _GLOG.search(text)
    if not m:
        return None
    try:
        naive = datetime(policy.year_for(int(m["mo"]), int(m["d"])), int(m["mo"]), int(m["d"]),
                         int(m["h"]), int(m["mi"]),
                         int(m["s"]), _micro(m["frac"]))
    except ValueError:
        return None
    return policy.localize(naive), Clock.inferred_year


def parse_any(text: str, policy: ClockPolicy) -> tuple[datetime, Clock] | None:
    """The first timestamp found in a line, trying the full forms before the partial ones."""
    for fn in (parse_iso, parse_ctime, parse_glog):
        hit = fn(text, policy)
        if hit:
            return hit
    return parse_syslog(text.lstrip(), policy)
