"""Transforms about time: the bundle's zone changed with every zoneless time rewritten to keep
its instant, and a harmless event hours before the failure with the window opened to hold it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.metamorphic.bundle_text import load_incident, rewrite, save_incident, text_files
from tests.metamorphic.transforms import CaseInfo

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_ZONED_AFTER = r"(?!\d|[.,]\d|\s?(?:Z|UTC|[+-]\d{2}:?\d{2}))"
# zoneless wall-clock times as systems print them (the zoned ones are left alone)
_ZONELESS = re.compile(
    r"(?P<iso>(?<!\d)(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})(?P<sep>[T _])(?P<h>\d{2}):"
    r"(?P<mi>\d{2}):(?P<s>\d{2})(?P<frac>[.,]\d{1,9})?" + _ZONED_AFTER + ")"
    r"|(?P<named>\b(?:(?P<wd>" + "|".join(WEEKDAYS) + r")(?P<wsp>\s+))?(?P<mon>"
    + "|".join(MONTHS) + r")(?P<dsp>\s+)(?P<nd>\d{1,2}) (?P<nh>\d{2}):(?P<nmi>\d{2}):"
    r"(?P<ns>\d{2})(?P<nfrac>\.\d{1,9})?(?:(?P<ysp>\s+)(?P<ny>\d{4}))?\b)"
    r"|(?P<glog>(?<![\w])(?P<sev>[IWEF])(?P<gmo>\d{2})(?P<gd>\d{2}) (?P<gh>\d{2}):(?P<gmi>\d{2}):"
    r"(?P<gs>\d{2})(?P<gfrac>\.\d{1,9})?)"
)


def zone_of(name: str | None) -> tzinfo:
    return UTC if not name or name.upper() == "UTC" else ZoneInfo(name)


def _day(original: str, day: int) -> str:
    if len(original) == 2 and original[0] == "0":
        return f"{day:02d}"
    return f"{day:2d}" if len(original) == 2 else str(day)


def shift_zoneless(text: str, old: tzinfo, new: tzinfo, year: int) -> str:
    """Every zoneless time in `text` re-expressed in zone `new` (same instant)."""

    def moved(naive: datetime) -> datetime:
        return naive.replace(tzinfo=old).astimezone(new).replace(tzinfo=None)

    def sub(m: re.Match[str]) -> str:
        if m["iso"]:
            t = moved(datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]),
                               int(m["s"])))
            return t.strftime(f"%Y-%m-%d{m['sep']}%H:%M:%S") + (m["frac"] or "")
        if m["named"]:
            y = int(m["ny"]) if m["ny"] else year
            t = moved(datetime(y, MONTHS.index(m["mon"]) + 1, int(m["nd"]), int(m["nh"]),
                               int(m["nmi"]), int(m["ns"])))
            out = (WEEKDAYS[t.weekday()] + m["wsp"]) if m["wd"] else ""
            out += f"{MONTHS[t.month - 1]}{m['dsp']}{_day(m['nd'], t.day)} {t:%H:%M:%S}"
            out += m["nfrac"] or ""
            return out + (f"{m['ysp']}{t.year}" if m["ny"] else "")
        t = moved(datetime(year, int(m["gmo"]), int(m["gd"]), int(m["gh"]), int(m["gmi"]),
                           int(m["gs"])))
        return f"{m['sev']}{t:%m%d %H:%M:%S}" + (m["gfrac"] or "")

    return _ZONELESS.sub(sub, text)


def _as_datetime(value: object) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _window_bounds(spec: dict) -> tuple[datetime, datetime] | None:
    w = spec.get("window")
    if not isinstance(w, dict) or "start" not in w or "end" not in w:
        return None
    return _as_datetime(w["start"]), _as_datetime(w["end"])


def _instant(t: datetime, zone: tzinfo) -> datetime:
    return (t if t.tzinfo else t.replace(tzinfo=zone)).astimezone(UTC)


def _express(instant: datetime, like: datetime | None, zone: tzinfo) -> str:
    """`instant` written as `like` was: with an offset in `zone` if it had one, else (or
    without `like`) as a zoneless time in `zone`."""
    local = instant.astimezone(zone)
    return local.isoformat() if like and like.tzinfo else local.replace(tzinfo=None).isoformat()


def target_zone(current: str | None) -> str:
    """A zone without daylight saving and with a half-hour offset, unlike the case's."""
    return "Asia/Kathmandu" if current == "Asia/Kolkata" else "Asia/Kolkata"


WINDOW_KEYS = ("window", "baseline", "incident")


def shift_time_zone(root: Path, info: CaseInfo) -> Path:
    """The bundle's declared zone changed, every zoneless time rewritten in the new zone and
    the windows re-expressed in it (for every other case without an offset, which the contract
    reads in the declared zone): the true instants are unchanged."""
    spec = load_incident(root)
    old_name = spec.get("timezone")
    new_name = target_zone(old_name)
    old, new = zone_of(old_name), ZoneInfo(new_name)
    bounds = _window_bounds(spec)
    year = bounds[0].year if bounds else datetime.now(UTC).year
    for path in list(text_files(root, metrics=False)):
        rewrite(path, lambda text: shift_zoneless(text, old, new, year))
    naive = info.rng("zone").random() < 0.5
    for key in WINDOW_KEYS:
        w = spec.get(key)
        if isinstance(w, dict) and "start" in w and "end" in w:
            spec[key] = {edge: _express(_instant(_as_datetime(w[edge]), old),
                                        None if naive else _as_datetime(w[edge]), new)
                         for edge in ("start", "end")}
    spec["timezone"] = new_name
    save_incident(root, spec)
    return root


# --------------------------------------------------------------------------- a harmless event

DECOY_MESSAGE = ("NVRM: Xid (PCI:0000:1b:00): 13, pid=4242, name=python, Graphics Exception: "
                 "ESR 0x405848=0x3d000000 0x40584c=0x0 0x405850=0x0 0x405854=0x0")
DECOY_LEAD = timedelta(hours=3)  # before the window's start
KERNEL_NAMES = ("kern", "dmesg", "syslog", "messages", "journal")
_HEADS = {  # how a kernel log's first line starts -> how to write a line in that form
    "short_iso": re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d\d:?\d\d \S+ "),
    "dmesg_iso": re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d+[+-]\d\d:\d\d "),
    "syslog": re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ "),
    "ctime": re.compile(r"^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] "),
}


def _decoy_line(style: str, when: datetime, zone: tzinfo, host: str) -> str:
    local = when.astimezone(zone)
    if style == "short_iso":
        return f"{local:%Y-%m-%dT%H:%M:%S%z} {host} kernel: {DECOY_MESSAGE}"
    if style == "dmesg_iso":
        return f"{local.isoformat(timespec='microseconds').replace('.', ',')} {DECOY_MESSAGE}"
    if style == "syslog":
        return f"{MONTHS[local.month - 1]} {local.day:02d} {local:%H:%M:%S} {host} kernel: " \
               f"{DECOY_MESSAGE}"
    return f"[{WEEKDAYS[local.weekday()]} {MONTHS[local.month - 1]} {local.day:2d} " \
           f"{local:%H:%M:%S %Y}] {DECOY_MESSAGE}"


def _kernel_logs(root: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for path in text_files(root, metrics=False):
        parts = path.relative_to(root).parts
        if len(parts) >= 3 and parts[-3] == "nodes" and path.name.startswith(KERNEL_NAMES):
            out.setdefault(parts[-2], []).append(path)
    return out


def _node_folders(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_dir() and p.parent.name == "nodes"}


def decoy_node(root: Path, info: CaseInfo) -> str | None:
    """A node of the job other than the verdict's: one with a kernel log when there is one."""
    short = (info.node or "").split(".")[0]
    logs = _kernel_logs(root)
    others = sorted((n for n in _node_folders(root) if n.split(".")[0] != short),
                    key=lambda n: (n not in logs, n))
    return others[0] if others else None


def can_add_decoy(root: Path, info: CaseInfo) -> bool:
    return _window_bounds(load_incident(root)) is not None and decoy_node(root, info) is not None


def add_decoy_event(root: Path, info: CaseInfo) -> Path:
    """An Xid 13 (a graphics exception an application can cause) on another node three hours
    before the window, written at the top of that node's kernel log in the log's own form
    (or as its journalctl -k log where the bundle has none), and the window opened to hold
    it: a pre-existing condition, not the failure's cause."""
    spec = load_incident(root)
    start, end = _window_bounds(spec) or (None, None)
    zone = zone_of(spec.get("timezone"))
    when = _instant(start, zone) - DECOY_LEAD
    node = decoy_node(root, info)
    logs = _kernel_logs(root).get(node, [])
    for path in logs:
        first = path.read_text(errors="replace").split("\n", 1)[0]
        style = next((s for s, p in _HEADS.items() if p.match(first)), None)
        if style:
            rewrite(path, lambda text, s=style: _decoy_line(s, when, zone, node) + "\n" + text)
            break
    else:  # no kernel log in a wall-clock form: one from journalctl -k -o short-iso
        folder = next(p for p in root.rglob(node) if p.is_dir() and p.parent.name == "nodes")
        (folder / ("kern.log.1" if logs else "kern.log")).write_text(
            _decoy_line("short_iso", when, UTC, node) + "\n")
    spec["window"] = {"start": _express(when - timedelta(minutes=10), start, zone),
                      "end": end.isoformat()}
    save_incident(root, spec)
    return root
