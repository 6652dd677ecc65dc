from datetime import UTC, datetime

from goodput_agent.core.events import Clock
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any, parse_glog, parse_syslog


def test_offset_times_become_utc() -> None:
    ts, clock = parse_any("2024-05-01T10:04:12,123456+02:00 kernel: x", ClockPolicy())
    assert ts == datetime(2024, 5, 1, 8, 4, 12, 123456, tzinfo=UTC)
    assert clock is Clock.absolute


def test_naive_times_take_the_bundle_zone() -> None:
    policy = ClockPolicy(tz_name="America/Chicago", year=2024)
    ts, clock = parse_any("2024-05-01 10:00:00,500 INFO step 10", policy)
    assert ts == datetime(2024, 5, 1, 15, 0, 0, 500000, tzinfo=UTC)  # CDT is UTC-5
    assert clock is Clock.local


def test_syslog_and_glog_take_the_bundle_year() -> None:
    policy = ClockPolicy(year=2023)
    ts, clock = parse_syslog("May 15 23:09:27 host kernel: x", policy)
    assert ts == datetime(2023, 5, 15, 23, 9, 27, tzinfo=UTC)
    assert clock is Clock.inferred_year
    ts, _ = parse_glog("[rank3]:[E1122 10:15:32.123456 1234 ProcessGroupNCCL.cpp:616]", policy)
    assert ts == datetime(2023, 11, 22, 10, 15, 32, 123456, tzinfo=UTC)


def test_ctime_form_of_dmesg_t() -> None:
    ts, _ = parse_any("[Sun Jan 11 09:52:01 2026] NVRM: x", ClockPolicy())
    assert ts == datetime(2026, 1, 11, 9, 52, 1, tzinfo=UTC)


def test_no_time_is_none() -> None:
    assert parse_any("no time on this line", ClockPolicy()) is None
    assert parse_any("2024-13-45T99:00:00 impossible", ClockPolicy()) is None


def test_year_is_the_one_nearest_the_incident_at_new_year() -> None:
    policy = ClockPolicy(year=2024, anchor=datetime(2024, 1, 1, 0, 0, tzinfo=UTC))
    ts, _ = parse_syslog("Dec 31 23:59:48 gpu-c02 kernel: NVRM: x", policy)
    assert ts == datetime(2023, 12, 31, 23, 59, 48, tzinfo=UTC)
    ts, _ = parse_glog("[E0101 00:00:05.000000 1 x.cpp:1]", policy)
    assert ts == datetime(2024, 1, 1, 0, 0, 5, tzinfo=UTC)

def test_go_standard_logger_time_is_read_on_the_bundle_clock() -> None:
    # the NVIDIA device plugin logs through Go's standard logger: "2006/01/02 15:04:05"
    hit = parse_any("2020/08/10 19:09:42 XidCriticalError: Xid=69", ClockPolicy(tz_name="UTC"))
    assert hit is not None and hit[0].isoformat() == "2020-08-10T19:09:42+00:00"
    assert parse_any("2020-08/10 19:09:42 mixed separators", ClockPolicy()) is None
