from datetime import UTC, date, datetime, timedelta

import pytest

from goodput_agent.core.errors import BadInput
from goodput_agent.core.timespec import parse_duration, parse_window, since


def test_durations():
    assert parse_duration("6h") == timedelta(hours=6)
    assert parse_duration("90m") == timedelta(minutes=90)
    assert parse_duration("1.5d") == timedelta(hours=36)
    with pytest.raises(BadInput, match="not a duration"):
        parse_duration("six hours")


def test_clock_window_on_a_day_in_a_zone():
    w = parse_window("10:00-11:30", day=date(2026, 6, 1), tz_name="Europe/Berlin")
    assert w.start == datetime(2026, 6, 1, 8, 0, tzinfo=UTC)  # CEST is UTC+2
    assert w.seconds == 5400


def test_window_across_midnight_and_iso():
    w = parse_window("23:30-00:30", day=date(2026, 12, 2))
    assert w.start == datetime(2026, 12, 2, 23, 30, tzinfo=UTC) and w.seconds == 3600
    w = parse_window("2026-12-02T10:00Z/2026-12-02T12:00:00+01:00")
    assert w.start.hour == 10 and w.end.hour == 11


@pytest.mark.parametrize("text", ["10:00", "11:00-10:00x", "2026-12-02T10:00Z/2026-12-02T09:00Z"])
def test_bad_windows_are_one_line(text):
    with pytest.raises(BadInput) as e:
        parse_window(text, day=date(2026, 12, 2))
    assert "\n" not in str(e.value)


def test_since():
    now = datetime(2026, 12, 2, 12, tzinfo=UTC)
    assert since("6h", now).start == datetime(2026, 12, 2, 6, tzinfo=UTC)


def test_unknown_zone():
    with pytest.raises(BadInput, match="unknown time zone"):
        parse_window("10:00-11:00", tz_name="Mars/Olympus")


def test_rfc3339_api_times() -> None:
    from goodput_agent.core.timespec import rfc3339

    assert rfc3339("2026-12-04T05:00:00Z") == datetime(2026, 12, 4, 5, tzinfo=UTC)
    assert rfc3339("2026-12-04T06:00:00+01:00") == datetime(2026, 12, 4, 5, tzinfo=UTC)
    assert rfc3339("2026-12-04T05:00:00").tzinfo is not None
    assert rfc3339("") is None and rfc3339(None) is None and rfc3339("yesterday") is None
