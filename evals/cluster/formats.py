"""Time stamps, ids and host lists in the shapes the systems print them."""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo


def _tz(name: str) -> tzinfo:
    return UTC if name.upper() == "UTC" else ZoneInfo(name)


def _iso_z(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _offset_colon(t: datetime) -> str:
    z = t.strftime("%z")
    return f"{z[:3]}:{z[3:]}"


def _uptime(seconds: float) -> str:
    whole = int(seconds)
    micro = int(round((seconds - whole) * 1_000_000)) % 1_000_000
    return f"[{whole:5d}.{micro:06d}]"


def _hms_frac(t: datetime, digits: int) -> str:
    base = t.strftime("%H:%M:%S")
    if digits == 0:
        return base
    micro = f"{t.microsecond:06d}"
    if digits <= 6:
        return f"{base}.{micro[:digits]}"
    return f"{base}.{micro}{(t.microsecond * 7 + 311) % 1000:03d}"


def _py_ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _hex(rng: random.Random, digits: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(digits))


def _uuid(rng: random.Random) -> str:
    return f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 12)}"


def compress_hostlist(names: Iterable[str]) -> str:
    """Slurm's compressed host list: gpu-[01-03,07],dgx-a100-12."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in names:
        head = name.rstrip("0123456789")
        digits = name[len(head) :]
        if not digits:
            plain.append(name)
            continue
        groups.setdefault((head, len(digits)), []).append(int(digits))
    parts: list[str] = []
    for (head, width), nums in groups.items():
        nums = sorted(set(nums))
        if len(nums) == 1:
            parts.append(f"{head}{nums[0]:0{width}d}")
            continue
        ranges: list[str] = []
        lo = prev = nums[0]
        for n in [*nums[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{lo:0{width}d}" if lo == prev else f"{lo:0{width}d}-{prev:0{width}d}")
            if n is not None:
                lo = prev = n
        parts.append(f"{head}[{','.join(ranges)}]")
    return ",".join(parts + plain)


def _elapsed(seconds: float) -> str:
    s = int(seconds)
    days, rem = divmod(s, 86400)
    hms = f"{rem // 3600:02d}:{rem % 3600 // 60:02d}:{rem % 60:02d}"
    return f"{days}-{hms}" if days else hms


def kernel_line(style: str, lt: datetime, host: str, ident: str, up: str, msg: str) -> str:
    """One kernel-log line as journalctl / rsyslog / dmesg print it (lt: local time)."""
    if style == "short":
        return f"{lt:%b %d %H:%M:%S} {host} {ident}: {msg}"
    if style == "short-iso":
        return f"{lt:%Y-%m-%dT%H:%M:%S%z} {host} {ident}: {msg}"
    if style == "short-precise":
        return f"{lt:%b %d %H:%M:%S.%f} {host} {ident}: {msg}"
    if style == "syslog":
        body = f"{up} {msg}" if ident == "kernel" else msg
        return f"{lt:%b} {lt.day:2d} {lt:%H:%M:%S} {host} {ident}: {body}"
    if style == "rfc3339":
        return f"{lt.isoformat(timespec='microseconds')} {host} {ident}: {msg}"
    if style == "dmesg-T":
        return f"[{lt:%a %b} {lt.day:2d} {lt:%H:%M:%S %Y}] {msg}"
    if style == "dmesg-iso":
        return f"{lt:%Y-%m-%dT%H:%M:%S},{lt.microsecond:06d}{_offset_colon(lt)} {msg}"
    if style == "dmesg-raw":
        return f"{up} {msg}"
    raise ValueError(f"unknown kernel style {style}")
