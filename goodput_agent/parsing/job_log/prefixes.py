"""Who printed a line and when: launcher rank prefixes, timestamps, ranks in file names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from goodput_agent.core.events import Clock
from goodput_agent.parsing.timefmt import ClockPolicy, parse_iso, parse_syslog

# a syslog header's time: BSD syslog's, or journalctl -o short-iso's / RFC 3339's
_SYSLOG_TIME_SRC = (r"[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)?|"
                    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+\-]\d{2}:?\d{2})?")
_PREFIX_SRC = (
    # a syslog header before a launcher prefix: the ranks' output forwarded by journald/rsyslog
    # ("Sep 23 13:50:09 host python3[1144714]: [rank44]:..."); kept where no prefix follows
    # (its time already taken off where it is RFC 3339's: strip_runtime_ts)
    rf"(?:(?:(?:{_SYSLOG_TIME_SRC})[ \t]+)?[\w.\-]+[ \t]+(?!kernel:)[\w.\-/@]+(?:\[\d+\])?:"
    r"[ \t]?(?=\[[A-Za-z_]*\d+\]:|\d{1,6}: |\[\d+,\d+\]<std))?"
    r"(?:>[ \t]?)*"  # a markdown quote around a pasted log ("> torch.cuda.OutOfMemoryError: ..")
    r"(?:[a-z0-9][\w.\-]*[ \t]+\|[ \t])?"  # docker compose's service column ("trainer-1  | ")
    # the process tag Ray puts before a worker's output and vLLM V1 before its processes'
    # ("(RayTrainWorker pid=1234, ip=10.0.0.1) ", "(raylet, ip=10.0.3.179) ",
    # "(EngineCore_DP0 pid=494) "): its ip is the worker's node
    r"(?:\((?=[^)\n]*\b(?:pid|ip)=)(?:[A-Za-z_][\w.\-]*(?:,[ \t]*|[ \t]+))?(?:rank=\d+[ \t]+)?"
    r"(?:pid=(?P<pid>\d+))?(?:,?[ \t]*ip=(?P<ip>[\w.:\-]+))?\)[ \t]+)?"
    r"(?:\[\d+\][ \t]+(?=\[))?"  # "[80746] [rank0]:" line counters pasted by viewers
    r"(?:\d{2}:\d{2}:\d{2}(?:\.\d+)?[ \t]+(?=\[))?"  # "18:11:06.680 [rank4]:" viewer clock
    r"(?:[ \t]*(?P<label>\d{1,6}): )?"  # srun --label
    r"(?:\[\d+,(?P<mpi>\d+)\]<std(?:out|err)>:)?"  # mpirun --tag-output
    r"(?:\[(?P<role>[A-Za-z_][\w\-]*?)(?P<rnum>\d+)\]:)?"  # [default3]: / [rank3]:
    r"(?:\[rank(?P<grank>\d+)\]:)?"  # [default3]:[rank11]:
)
_HEAD_TS_SRC = (
    r"[ \t]*(?:\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL|TRACE)\]?[ \t]*[:|\-]?[ \t]*)?"
    r"\[?(?P<ts>\d{4}-\d{2}-\d{2}[T _]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
    r"(?: ?(?:Z|[+\-]\d{2}:?\d{2}|UTC)(?!\w))?"
    r"|[IWEF]\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)"
)
_PREFIX = re.compile(_PREFIX_SRC)
HEAD_TS = re.compile(_HEAD_TS_SRC)
TS_PROBE = re.compile((_PREFIX_SRC + _HEAD_TS_SRC).encode())
_GLOG_TS = re.compile(r"[IWEF](\d{3,4}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")


@dataclass(frozen=True, slots=True)
class LinePrefix:
    """What a line's launcher prefixes say about who printed it."""

    label: int | None = None  # srun --label task id
    local: int | None = None  # torchrun --tee local rank ([default3]:)
    rank: int | None = None  # global rank ([rank3]:, mpirun --tag-output)
    host: str | None = None  # the node a Ray worker's tag names (ip=10.0.0.1)
    pid: int | None = None  # the process a Ray or vLLM process tag names

    @property
    def key(self) -> tuple[int | str | None, ...]:
        """Whose stream of lines: a traceback's lines are one process's."""
        return (self.label, self.local, self.rank, self.host, self.pid)


# `kubectl logs --timestamps` / the container runtime put an RFC 3339 time before the line
_RUNTIME_TS = re.compile(
    r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})) ")


SYSLOG_TS = re.compile(rf"(?P<ts>{_SYSLOG_TIME_SRC}) ")


def strip_runtime_ts(line: str) -> tuple[str | None, str]:
    m = _RUNTIME_TS.match(line)
    return (m[1], line[m.end():]) if m else (None, line)


def split_prefix(line: str) -> tuple[LinePrefix, str]:
    """The launcher prefixes of a line, and the rest of it (indentation kept)."""
    m = _PREFIX.match(line)
    if not m or m.end() == 0:
        return LinePrefix(), line
    label = int(m["label"]) if m["label"] is not None else None
    local = rank = None
    if m["mpi"] is not None:
        rank = int(m["mpi"])
    if m["role"] is not None:
        if m["role"].lower() == "rank":
            rank = int(m["rnum"])
        else:
            local = int(m["rnum"])
    if m["grank"] is not None:
        rank = int(m["grank"])
    pid = int(m["pid"]) if m["pid"] is not None else None
    return LinePrefix(label, local, rank, m["ip"], pid), line[m.end():]


def _glog_time(text: str, policy: ClockPolicy) -> tuple[datetime, Clock] | None:
    m = _GLOG_TS.match(text)
    if not m:
        return None
    md = m[1]
    month, day = (int(md[:2]), int(md[2:])) if len(md) == 4 else (int(md[0]), int(md[1:]))
    try:
        naive = datetime(policy.year_for(month, day), month, day, int(m[2]), int(m[3]), int(m[4]),
                         int((m[5] or "0")[:6].ljust(6, "0")))
    except ValueError:
        return None
    return policy.localize(naive), Clock.inferred_year


def parse_time_text(text: str, policy: ClockPolicy) -> tuple[datetime, Clock] | None:
    """An ISO / Python logging / torchelastic ("2024-09-09_09:36:56") or glog time."""
    text = text.strip()
    if not text:
        return None
    if text[0].isdigit():
        if len(text) > 10 and text[10] == "_":
            text = text[:10] + " " + text[11:]
        return parse_iso(text, policy)
    if SYSLOG_TS.match(text + " "):  # a syslog header's (the ranks' output forwarded)
        return parse_syslog(text, policy)
    return _glog_time(text, policy)


_RANK_IN_NAME = re.compile(r"(?i)(?:^|[._\-/])(local[_\-]?)?rank[_\-]?(\d{1,6})(?=[._\-]|$)")


def rank_from_filename(name: str) -> int | None:
    """The global rank a file name states (rank3.log, rank-3.out, x.rank_3.txt, nccl_trace_rank_3).

    Not ranks: host names (gpu-07.log), worker / pod indices (worker-3.log: a pod per node),
    "<host>_<pid>" names, local ranks (local_rank3.log), bare numbers and Slurm job ids.
    """
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    for m in _RANK_IN_NAME.finditer(base):
        if m[1] is None:
            return int(m[2])
    return None
