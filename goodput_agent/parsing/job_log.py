"""The training job's own output: per-rank logs and combined logs of many ranks.

Line shapes understood (a file can mix them):
- per-rank files: every unprefixed line belongs to `ctx.rank_hint`;
- rank prefixes: "[rank3]:" (PyTorch c10 / torchrun, global rank), "[default3]:" (torchrun
  --tee, a LOCAL rank), "3: " / "  3: " (srun --label, a task id), "[1,3]<stdout>:" (mpirun
  --tag-output, global rank), and combinations ("3: [default2]:[rank26]:...");
- timestamps: Python logging / ISO ("2024-05-01 10:00:00,123"), glog / c10 ("[E1122
  10:15:32.123456 ...]" and PyTorch's unpadded month "[E321 02:07:08.4]"); a line without a time
  takes the previous timestamped line's time (Clock.carried), or none when there is none before.

Local ranks ([default3]:) become global ranks only with evidence from the same file: a line
that carries both a local and a global rank ("[default3]:[rank11]:"), an NCCL init line of the
world communicator under a local prefix, or a torchelastic summary ("rank : 11 (local_rank:
3)"); these give an offset per srun task (node). A file whose local ranks cover the whole world
(single node) maps local == global. Otherwise `rank` stays None and detail["local_rank"] keeps
the local one. An srun label is taken as the global rank unless the file shows it names a
launcher per node (labelled lines that also carry a local-rank prefix or torchelastic agent
output); then it is kept in detail["task"].

Ranks and hosts: NCCL lines ("host:pid:tid [dev] NCCL INFO ...") give host and CUDA device of a
rank; the world communicator's init line ("comm 0x.. rank 3 nranks 64 cudaDev 3 busId 84000")
gives rank -> host and rank -> GPU as a PCI bus id ("0000:84:00", the kernel's Xid form);
only communicators with the largest nranks seen are trusted (sub-groups number ranks their way).

Events: CUDA OOM, Python tracebacks (one event per traceback, chained tracebacks marked), CUDA
errors, NCCL watchdog timeouts and progress, NCCL NET/IB and socket errors, NCCL error codes,
torchelastic agent lines and its ChildFailedError summary, srun / slurmstepd lines, segfaults
and signals. See `classify_exception` for how an exception is judged.

Speed: the file is read in large binary chunks; only lines with one of MARKERS are decoded, plus
a window of lines after a traceback header or frame (exception lines carry no fixed marker).
The time of the last timestamped line before each decoded line is found by stepping back over
the undecoded lines in between (bounded), so carried times are not taken from stale lines.
"""

from __future__ import annotations

import gzip
import re
import signal
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from goodput_agent.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing import kernel_log, nccl_vocab
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.lines import CHUNK_BYTES, decode
from goodput_agent.parsing.prefilter import count_newlines, prefilter_for
from goodput_agent.parsing.timefmt import ClockPolicy, parse_iso

FORMAT = "job_log"
EXCERPT_CHARS = 500
MESSAGE_CHARS = 1000
BARE_EXCEPTION_WEIGHT = 0.3  # an exception line without its traceback
LOOKBACK_LINES = 20_000  # how far back (undecoded lines) to look for the carried time

# Literal markers: a line is decoded only when it holds one of these (case-sensitive). One
# prefilter pass finds them all (prefilter.py); they are broad, the matchers below filter.
MARKERS: tuple[bytes, ...] = (
    b"rror",  # Error / error: exceptions, "srun: error:", "slurmstepd: error: *** JOB ..."
    b"xception", b"Traceback", b"NCCL", b"emory", b"atchdog", b"ignal", b"exitcode",
    b"Segmentation", b"core dumped", b"peer", b"Killed",
    b"ocket",  # NCCL's socket transport: "Socket creation failed", "socketStartConnect"
    b"NVRM", b"oom-kill",  # kernel lines forwarded into the job's output
)
# After a decoded line holding a trigger, the next N lines are decoded whatever they hold:
# traceback frames and exception lines, a watchdog message wrapped over lines, and the
# torchelastic ChildFailedError summary (field lines re-arm the window).
TRIGGERS: tuple[tuple[bytes, int], ...] = (
    (b"Traceback (most recent call last)", 80),
    (b'File "', 40),
    (b"Watchdog caught", 3),
    (b"ChildFailedError", 40),
    (b"Root Cause", 12),
    (b"      : ", 12),
)

# ---------------------------------------------------------------------------------------------
# line prefixes and timestamps

_PREFIX_SRC = (
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
_HEAD_TS = re.compile(_HEAD_TS_SRC)
_TS_PROBE = re.compile((_PREFIX_SRC + _HEAD_TS_SRC).encode())
_GLOG_TS = re.compile(r"[IWEF](\d{3,4}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")


@dataclass(frozen=True, slots=True)
class LinePrefix:
    """What a line's launcher prefixes say about who printed it."""

    label: int | None = None  # srun --label task id
    local: int | None = None  # torchrun --tee local rank ([default3]:)
    rank: int | None = None  # global rank ([rank3]:, mpirun --tag-output)

    @property
    def key(self) -> tuple[int | None, int | None, int | None]:
        return (self.label, self.local, self.rank)


# `kubectl logs --timestamps` / the container runtime put an RFC 3339 time before the line
_RUNTIME_TS = re.compile(
    r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})) ")


def _strip_runtime_ts(line: str) -> tuple[str | None, str]:
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
    return LinePrefix(label, local, rank), line[m.end():]


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
    return _glog_time(text, policy)


def head_time(content: str, policy: ClockPolicy) -> tuple[datetime, Clock] | None:
    """The timestamp a line starts with (after its launcher prefixes), if any."""
    m = _HEAD_TS.match(content)
    return parse_time_text(m["ts"], policy) if m else None


# ---------------------------------------------------------------------------------------------
# file names

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


# ---------------------------------------------------------------------------------------------
# sizes, signals, PCI ids

_SIZE = r"\d+(?:\.\d+)? ?(?:[KMGTPE]i?B|bytes|B)\b"
_UNITS = {"b": 1, "bytes": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "pib": 1024**5}


def size_to_bytes(text: str) -> int | None:
    m = re.match(r"\s*(\d+(?:\.\d+)?) ?([KMGTPE]?i?B|bytes)", text)
    if not m:
        return None
    factor = _UNITS.get(m[2].lower())
    return int(float(m[1]) * factor) if factor else None


def signal_name(num: int) -> str | None:
    try:
        return signal.Signals(num).name
    except ValueError:
        return None


_SIGNAL_MEANING = {
    "SIGKILL": "killed (kernel OOM killer, scheduler or launcher)",
    "SIGSEGV": "segmentation fault",
    "SIGABRT": "aborted (e.g. NCCL watchdog teardown or a C++ assertion)",
    "SIGTERM": "terminated (launcher or scheduler asked it to stop)",
    "SIGBUS": "bus error (often /dev/shm exhausted)",
    "SIGFPE": "floating point exception",
    "SIGINT": "interrupted",
}


def exit_code_detail(code: int) -> dict[str, Any]:
    """Exit code semantics: negative = killed by that signal (Python), 128+N = signal N (shell)."""
    out: dict[str, Any] = {"exitcode": code}
    num = -code if code < 0 else (code - 128 if 128 < code < 160 else None)
    if num:
        name = signal_name(num)
        out["signal"] = num
        if name:
            out["signal_name"] = name
            if name in _SIGNAL_MEANING:
                out["meaning"] = _SIGNAL_MEANING[name]
    return out


def bus_id_to_pci(bus: str) -> str:
    """NCCL's busId ("9b000": domain, bus, device, function in hex) as "0000:9b:00"."""
    v = bus.lower().rjust(9, "0")
    return f"{v[:-5][-4:]}:{v[-5:-3]}:{v[-3:-1]}"


# ---------------------------------------------------------------------------------------------
# classification shared with torchelastic.py

_OOM = re.compile(r"CUDA out of memory|HIP out of memory|CUDA error: out of memory|"
                  r"OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|"
                  r"Cuda failure (?:\d+ )?'out of memory'")
_OOM_TRIED = re.compile(r"Tried to allocate (" + _SIZE + ")")
_OOM_NEW = re.compile(r"GPU (\d+) has a total capac?ity of (" + _SIZE + r") of which (" + _SIZE
                      + r") is free")
_OOM_LEGACY = re.compile(r"\(GPU (\d+); (" + _SIZE + r") total capacity; (" + _SIZE
                         + r") already allocated; (" + _SIZE + r") free;(?: (" + _SIZE
                         + r") reserved in total by PyTorch)?")
_OOM_INUSE = re.compile(r"this process has (" + _SIZE + ") memory in use")
_OOM_ALLOC = re.compile(r"Of the allocated memory (" + _SIZE + r") is allocated by PyTorch, and ("
                        + _SIZE + ") is reserved by PyTorch but unallocated")
_HOST_OOM_EXC = re.compile(r"DefaultCPUAllocator: can't allocate memory|^MemoryError\b")


def oom_detail(text: str) -> dict[str, Any]:
    """Sizes in a CUDA OOM message (both the torch>=2.4 and the torch 1.x wording)."""
    d: dict[str, Any] = {}
    if m := _OOM_TRIED.search(text):
        d["tried"] = m[1]
        d["tried_bytes"] = size_to_bytes(m[1])
    if m := _OOM_NEW.search(text):
        d["gpu_index"] = int(m[1])
        d["total_bytes"] = size_to_bytes(m[2])
        d["free_bytes"] = size_to_bytes(m[3])
    elif m := _OOM_LEGACY.search(text):
        d["gpu_index"] = int(m[1])
        d["total_bytes"] = size_to_bytes(m[2])
        d["allocated_bytes"] = size_to_bytes(m[3])
        d["free_bytes"] = size_to_bytes(m[4])
        if m[5]:
            d["reserved_bytes"] = size_to_bytes(m[5])
    if m := _OOM_INUSE.search(text):
        d["process_used_bytes"] = size_to_bytes(m[1])
    if m := _OOM_ALLOC.search(text):
        d["allocated_bytes"] = size_to_bytes(m[1])
        d["reserved_unallocated_bytes"] = size_to_bytes(m[2])
    return d


def human_size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, f in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= f:
            return f"{n / f:.2f} {unit}"
    return f"{n} bytes"


def oom_summary(d: dict[str, Any]) -> str:
    s = "CUDA out of memory"
    if d.get("tried"):
        s += f": tried to allocate {d['tried']}"
    if d.get("total_bytes") is not None:
        s += f" ({human_size(d.get('free_bytes'))} free of {human_size(d['total_bytes'])})"
    return s


_CUDA_ERR = re.compile(r"CUDA error: ([^\n]+?)(?:\.?\s*(?:CUDA kernel errors|Compile with|$))|"
                       # PyTorch < 1.5 / THC: "cuda runtime error (39) : uncorrectable ECC ..."
                       r"cuda runtime error \(\d+\) ?: ([^\n]+?)(?: at \S+:\d+)?$|"
                       r"Cuda failure (?:\d+ )?'([^']+)'|(CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+)|"
                       r"(cudaError\w+)")
# (pattern, category, confidence): hardware first; everything else is the application's.
_CUDA_KINDS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"uncorrectable ECC|ECC error|cudaErrorECCUncorrectable", re.I), "gpu_hardware",
     "high"),
    (re.compile(r"uncorrectable NVLink|NVLink error", re.I), "gpu_hardware", "high"),
    (re.compile(r"fallen off the bus|GPU is lost", re.I), "gpu_hardware", "high"),
    (re.compile(r"busy or unavailable|devices? unavailable|cudaErrorDevicesUnavailable", re.I),
     "gpu_hardware", "medium"),
    (re.compile(r"system not yet initialized|no CUDA-capable device", re.I), "gpu_hardware", "low"),
    (re.compile(r"^unknown error|cudaErrorUnknown", re.I), "gpu_hardware", "low"),
    (re.compile(r"unspecified launch failure|launch failed", re.I), "application_error", "low"),
    (re.compile(r"CUBLAS_STATUS_EXECUTION_FAILED|CUDNN_STATUS_", re.I), "application_error", "low"),
)


def classify_cuda_error(text: str) -> tuple[str, str, str] | None:
    """(error text, category, confidence) for a CUDA runtime error in `text`, else None."""
    m = _CUDA_ERR.search(text)
    if not m:
        return None
    what = next(g for g in m.groups() if g).strip().rstrip(".")
    for rx, category, confidence in _CUDA_KINDS:
        if rx.search(what):
            return what, category, confidence
    return what, "application_error", "high"


_COMM_EXC_TYPES = frozenset({
    "DistBackendError", "DistNetworkError", "DistStoreError", "ChildFailedError",
    "SignalException", "KeyboardInterrupt", "RendezvousClosedError", "RendezvousTimeoutError",
    "BrokenPipeError", "ConnectionResetError", "ConnectionAbortedError",
})
_COMM_MSG = re.compile(
    r"NCCL communicator was aborted|ncclRemoteError|remote process exited|"
    r"Connection reset by peer|Broken pipe|Connection closed by|Watchdog caught collective|"
    r"ProcessGroupNCCL.*(?:time[d ]?\s?out|Timeout)|collective operation timeout|"
    r"got signal: \d+|NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|"
    r"unhandled system error|unhandled cuda error|Socket Timeout|"
    r"(?:wait|Timed out).*(?:store|TCPStore|rendezvous)", re.I)
_NCCL_USAGE = re.compile(r"ncclInvalidUsage|invalid usage", re.I)


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: EventKind
    role: Role
    category: str | None
    detail: dict[str, Any]


def classify_exception(exc_type: str, message: str) -> Verdict:
    """How much a Python exception says about the root cause.

    CUDA OOM -> cuda_oom (primary, gpu_oom); host allocation failures -> primary host_oom;
    CUDA errors -> cuda_error (hardware-looking ones gpu_hardware, the rest application_error);
    NCCL invalid usage -> primary application_error; distributed-communication errors and
    signals (DistBackendError, ncclRemoteError, connection reset, watchdog timeouts,
    ChildFailedError, SignalException, KeyboardInterrupt) -> symptom with no category;
    anything else -> primary application_error.
    """
    text = f"{exc_type}: {message}"
    short = exc_type.rsplit(".", 1)[-1]
    if _OOM.search(text):
        return Verdict(EventKind.cuda_oom, Role.primary, "gpu_oom", oom_detail(text))
    if _HOST_OOM_EXC.search(message) or short == "MemoryError":
        return Verdict(EventKind.python_exception, Role.primary, "host_oom", {})
    cuda = classify_cuda_error(text)
    if cuda:
        what, category, confidence = cuda
        return Verdict(EventKind.cuda_error, Role.primary, category,
                       {"cuda_error": what, "confidence": confidence})
    if _NCCL_USAGE.search(text) and "nccl" in text.lower():
        return Verdict(EventKind.python_exception, Role.primary, "application_error",
                       {"nccl_code": "ncclInvalidUsage"})
    if short in _COMM_EXC_TYPES or _COMM_MSG.search(text):
        return Verdict(EventKind.python_exception, Role.symptom, None, {"comm_symptom": True})
    if m := _KILLED_WORKER.search(message):
        if m["sig"].startswith("Bus error") or "shared memory" in message:
            # a DataLoader worker ran out of /dev/shm (host RAM, capped per container)
            return Verdict(EventKind.python_exception, Role.primary, "host_oom",
                           {"pid": int(m["pid"]), "signal": "SIGBUS", "shm": True})
        # a worker SIGKILLed from outside (the OOM killer, usually): the kill is the cause
        return Verdict(EventKind.signal, Role.symptom, "host_oom" if m["sig"] == "Killed"
                       else None, {"pid": int(m["pid"]), "signal": m["sig"]})
    return Verdict(EventKind.python_exception, Role.primary, "application_error", {})


# "WARNING ... OOM at micro-batch 16 (CUDA out of memory ...); retrying": caught and handled
_HANDLED = re.compile(r"\b(?:WARNING|WARN|INFO)\b.*\b(?:retry(?:ing)?|recovered|skipping|"
                      r"reducing|halving|fallback)\b", re.I)
_KILLED_WORKER = re.compile(r"worker \(pid:? ?(?P<pid>\d+)\) (?:is killed|exited unexpectedly) "
                            r"by signal: (?P<sig>[A-Za-z ]+)")


# ---------------------------------------------------------------------------------------------
# tracebacks

_FRAME = re.compile(r'^(?P<indent>\s*)File "(?P<file>[^"]+)", line (?P<line>\d+)'
                    r"(?:,? in (?P<fn>.+))?")
_EXC_SUFFIX = ("Error", "Exception", "Interrupt", "Exit", "Failure", "Failed", "Timeout",
               "Iteration", "Fault", "Abort", "Aborted", "Violation", "Exhausted", "Exceeded")
_EXC_BARE = frozenset({"KeyboardInterrupt", "SystemExit", "StopIteration", "GeneratorExit"})
_EXC_LINE = re.compile(r"^(?P<indent>\s*)(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)"
                       r"(?::[ ]?(?P<msg>.*))?$")
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")


def parse_exception_line(content: str) -> tuple[str, str, int] | None:
    """(type, message, indent) when `content` looks like a traceback's final exception line."""
    m = _EXC_LINE.match(content.rstrip())
    if not m:
        return None
    exc_type, msg = m["type"], m["msg"]
    last = exc_type.rsplit(".", 1)[-1]
    if last.endswith("Warning") or not last[:1].isupper():
        return None
    named = last.endswith(_EXC_SUFFIX) or last in _EXC_BARE
    dotted = "." in exc_type and msg is not None
    if not (named or dotted) or (msg is None and last not in _EXC_BARE and not named):
        return None
    return exc_type, (msg or "").strip(), len(m["indent"])


@dataclass(slots=True)
class Frame:
    file: str
    line: int
    function: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function}


def parse_frame(content: str) -> tuple[Frame, int] | None:
    m = _FRAME.match(content)
    if not m:
        return None
    fn = m["fn"].strip() if m["fn"] else None
    return Frame(m["file"], int(m["line"]), fn), len(m["indent"])


def _is_library(path: str) -> bool:
    return any(s in path for s in ("site-packages/", "dist-packages/", "/lib/python", "<frozen"))


def frames_detail(frames: list[Frame]) -> dict[str, Any]:
    d: dict[str, Any] = {"frames": len(frames)}
    if frames:
        d["innermost_frame"] = frames[-1].as_dict()
        d["frames_tail"] = [f.as_dict() for f in frames[-5:]]
        user = next((f for f in reversed(frames) if not _is_library(f.file)), None)
        if user is not None:
            d["innermost_user_frame"] = user.as_dict()
    return d


def summarize_callstack(text: str) -> tuple[str, str, list[Frame]] | None:
    """(exc_type, message, frames) of the last traceback in a formatted callstack string."""
    frames: list[Frame] = []
    exc: tuple[str, str] | None = None
    frame_indent = 0
    for raw in text.splitlines():
        if raw.lstrip().startswith("Traceback (most recent call last)"):
            frames, exc = [], None
            continue
        fr = parse_frame(raw)
        if fr:
            frames.append(fr[0])
            frame_indent = fr[1]
            continue
        e = parse_exception_line(raw)
        if e and (not frames or e[2] <= frame_indent):
            exc = (e[0], e[1])
    if exc is None:
        return None
    return exc[0], exc[1], frames


# ---------------------------------------------------------------------------------------------
# line patterns

_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout")
_WORKNCCL = re.compile(r"WorkNCCL\((?P<body>.*?)\)\s*(?:ran for|$)")
_RAN_FOR = re.compile(r"ran for (?P<ms>\d+) milliseconds")
_PG_TAG = re.compile(r"\[(?:PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>\S+?))? )?"
                     r"Rank (?P<rank>\d+)\]")
_PROGRESS = re.compile(r"[Ll]ast enqueued (?:NCCL )?work: (?P<enq>-?\d+),"
                       r"(?: [Ll]ast started (?:NCCL )?work: (?P<started>-?\d+),)?"
                       r" [Ll]ast completed (?:NCCL )?work: (?P<comp>-?\d+)")
_AT_WORK = re.compile(r"(?:at work(?: sequence id)?|Timeout at NCCL work): (?P<work>-?\d+)")
_DUMP_FROM = re.compile(r"collective timeout from\s+(?:rank (?P<rank>\d+)|this local rank)")
_STUCK = re.compile(r"watchdog got stuck for (?P<s>\d+) seconds")
_NCCL_LINE = re.compile(r"(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
                        r"(?:\S+ )?NCCL (?P<lvl>INFO|WARN|ERROR|TRACE|ABORT)\b ?(?P<msg>.*)")
# "Bootstrap : Using ib0:10.0.0.5<0>", "NET/Socket : Using [0]eth0:10.0.0.5<0>",
# "OOB ib0:10.0.0.5<0>"
_OWN_IP = re.compile(r"(?:Bootstrap : Using|NET/Socket : Using (?:\[\d+\])?|OOB) ?"
                     r"[\w.\-]+:(?P<ip>\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]+:[0-9a-fA-F:]*)<")
_COMM_INIT = re.compile(r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) n[Rr]anks (?P<n>\d+)"
                        r"(?: cudaDev (?P<cuda>\d+))?(?: nvmlDev \d+)?"
                        r"(?: busId (?P<bus>[0-9a-fA-F]+))?")
_IB_COMPLETION = re.compile(
    r"NET/IB\w*(?:/\w+)?\s*:\s*Got completion from peer\s*(?P<peer>[^\s<]*)(?:<(?P<port>\d+)>)?"
    r"\s+with\s+(?:status=|error\s*)(?:(?P<sname>IBV_WC_\w+)\()?(?P<status>\d+)\)?,?"
    r"\s*opcode[= ](?:\w+\()?(?P<opcode>\d+)\)?,?(?:\s*len[= ](?P<len>\d+),?)?"
    r"\s*vendor[ _]err[ =](?P<vendor>\d+)(?:\s*\((?P<dir>\w+)\))?(?:.*?\bhca (?P<hca>\S+))?")
_IB_OTHER = re.compile(r"(?P<name>IBV_WC_[A-Z_]+ERR\w*)|NET/IB\w*\s*:.*?(?:Got async event\s*:\s*"
                       r"(?P<async>[^,]+)|(?P<call>ibv_\w+)\S* failed)")
_CONN = re.compile(r"Connection reset by peer|Broken pipe|Connection closed by remote peer|"
                   r"closed by remote|Connection refused|ncclRemoteError|"
                   r"remote process exited or there was a network error")
_CONN_KEYS = ("onnection", "pipe", "remote")
_NCCL_CODES: tuple[tuple[str, re.Pattern[str], Role, str | None], ...] = (
    ("ncclInvalidUsage", re.compile(r"ncclInvalidUsage|invalid usage"), Role.primary,
     "application_error"),
    ("ncclSystemError", re.compile(r"ncclSystemError|unhandled system error"), Role.symptom,
     "network_fault"),
    ("ncclUnhandledCudaError", re.compile(r"ncclUnhandledCudaError|unhandled cuda error"),
     Role.symptom, None),
    ("ncclInternalError", re.compile(r"ncclInternalError|\binternal error\b"), Role.symptom, None),
)
_SLURM_OOM = re.compile(r"Detected (?P<n>\d+) oom[-_]kill events?(?:\(s\))? in "
                        r"(?:step |StepId=)?"
                        r"(?P<step>\d+(?:\.\w+)?)")
_SLURM_MEMLIMIT = re.compile(r"Exceeded (?:job|step) memory limit|exceeded memory limit")
_SRUN_TASK = re.compile(r"srun: error: (?P<node>[\w.\-]+): tasks? (?P<tasks>[\d,\-\[\] ]+?): "
                        r"(?P<what>Out Of Memory|Exited with exit code \d+|Killed|Terminated|"
                        r"Segmentation fault|Bus error|Aborted|[^,]+)")
_SRUN_NODEFAIL = re.compile(r"srun: error: Node failure on (?P<node>[\w.\-]+)")
_CANCELLED = re.compile(r"\*\*\* (?P<what>JOB|STEP) (?P<id>[\w.+]+) ON (?P<node>\S+) CANCELLED AT "
                        r"(?P<ts>\S+)(?: DUE TO (?P<reason>[A-Z_ ]+))?")
_ELASTIC_FAILED = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) "
                             r"\(pid: (?P<pid>\d+)\) of binary: (?P<bin>\S+)")
_CLOSING = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>SIG[A-Z]+)")
_DEATH = re.compile(r"Received (?P<sig>\d+|SIG[A-Z]+) death signal, shutting down workers")
_GOT_SIGNAL = re.compile(r"Process (?P<pid>\d+) got signal: (?P<sig>\d+)")
_SEGV = re.compile(r"Segmentation fault|Fatal Python error: (?P<fatal>Segmentation fault|Bus error|"
                   r"Floating point exception|Aborted)|\bBus error\b|\*\*\* SIGSEGV")
_ABORTED = re.compile(r"\bAborted \(core dumped\)")
_CRASH_KEYS = ("Segmentation", "Fatal Python", "Bus error", "SIGSEGV", "core dumped", "Killed")
_KILLED = re.compile(r"^\s*Killed\s*$|: \d+ Killed\s")
_WORLD = re.compile(r"(?i)\bworld[_ ]size\b[\"']?\s*[:=]\s*(\d+)")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
# torchelastic's _FAILURE_FORMAT_TEMPLATE pads every key to 10 columns
# torch >= 1.11 pads the keys ("time      : ..."); 1.9-1.10 do not and carry the error file's
# JSON under "msg:" ("message": "ValueError: ...")
_ELASTIC_FIELD = re.compile(r"^\s+(?P<key>time|host|rank|exitcode|error_file|traceback|msg)"
                            r" *: ?(?P<val>.*)$")
_ELASTIC_MSG_JSON = re.compile(r'^\s*"message"\s*:\s*"(?P<text>.*?)",?\s*$')

_IBV_STATUS = ("SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
               "WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
               "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR",
               "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
               "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR")


# ---------------------------------------------------------------------------------------------
# reading: marker lines, trigger windows, and the time of the last timestamped line before each


def _open(path: Path) -> BinaryIO:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _lookback(buf: bytes, lo: int, hi: int) -> bytes | None:
    """The last line in buf[lo:hi] (whole lines) that starts with a timestamp."""
    p = hi - 1
    steps = 0
    while p > lo and steps < LOOKBACK_LINES:
        q = max(buf.rfind(b"\n", lo, p) + 1, lo)
        if _TS_PROBE.match(buf, q, min(p, q + 200)):
            return buf[q:p]
        p = q - 1
        steps += 1
    return None


@dataclass(slots=True)
class ScanState:
    window: int = 0  # lines still to decode after a trigger
    lines: int = 0  # lines in the file, once the scan is done
    counted: tuple[int, int] = (0, 0)  # newlines counted in the buffer so far: (to offset, n)


def _scan_buffer(buf: bytes, base_line: int, st: ScanState
                 ) -> Iterator[tuple[int, str | None, str | None]]:
    ordered = prefilter_for(MARKERS).line_starts(buf)
    idx, cursor, n = 0, 0, len(buf)
    last_pos, last_line = 0, base_line
    while cursor < n:
        if st.window <= 0:
            while idx < len(ordered) and ordered[idx] < cursor:
                idx += 1
            if idx == len(ordered):
                break
            s = ordered[idx]
        else:
            s = cursor
        end = buf.find(b"\n", s)
        end = n if end == -1 else end
        ts_line = _lookback(buf, cursor, s) if s > cursor else None
        last_line += count_newlines(buf, last_pos, s)
        last_pos = s
        raw = buf[s:end]
        st.window -= 1
        for trig, size in TRIGGERS:
            if trig in raw:
                st.window = max(st.window, size)
        st.counted = (last_pos, last_line - base_line)
        yield last_line, decode(raw), decode(ts_line) if ts_line else None
        cursor = end + 1
    if cursor < n:  # the tail: a timestamp there is the carried time for the next chunk
        ts_line = _lookback(buf, cursor, n if buf.endswith(b"\n") else n + 1)
        if ts_line:
            yield 0, None, decode(ts_line)


def scan_with_times(path: Path, st: ScanState | None = None
                    ) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, decoded line, last timestamped line before it); line None = time only."""
    st = st if st is not None else ScanState()
    with _open(path) as fh:
        carry = b""
        base_line = 1
        while True:
            block = fh.read(CHUNK_BYTES)
            if not block and not carry:
                return
            buf = carry + block
            if block:
                cut = buf.rfind(b"\n")
                if cut == -1:
                    if len(buf) <= CHUNK_BYTES * 2:
                        carry = buf
                        continue
                    cut = len(buf) - 1  # pathological single line: cut it
                carry, buf = buf[cut + 1:], buf[: cut + 1]
            else:
                carry = b""
            st.counted = (0, 0)
            yield from _scan_buffer(buf, base_line, st)
            upto, seen = st.counted
            base_line += seen + count_newlines(buf, upto)
            st.lines = base_line - 1 + (0 if buf.endswith(b"\n") else 1)
            if not block:
                return


# ---------------------------------------------------------------------------------------------
# building events


@dataclass(slots=True)
class _Pending:
    kind: EventKind
    role: Role
    category: str | None
    summary: str
    line_start: int
    line_end: int
    excerpt: str
    prefix: LinePrefix
    ts: datetime | None = None
    clock: Clock = Clock.none
    detail: dict[str, Any] = field(default_factory=dict)
    rank: int | None = None  # an explicit global rank (torchelastic summary, srun task)
    local: int | None = None  # an explicit local rank (torchelastic agent lines)
    node: str | None = None
    host_pid: tuple[str, int] | None = None
    msg_rank: int | None = None  # "[Rank N]" with no PG: a fallback only


@dataclass(slots=True)
class _Traceback:
    start: int
    frames: list[Frame] = field(default_factory=list)
    frame_indent: int = 0
    chained: bool = False
    entry: _ElasticEntry | None = None
    lines_seen: int = 0


@dataclass(slots=True)
class _ElasticEntry:
    root: bool
    start: int
    end: int
    prefix: LinePrefix
    excerpt: str
    fields: dict[str, str] = field(default_factory=dict)
    exc: tuple[str, str] | None = None


@dataclass(slots=True)
class _Stream:
    tb: _Traceback | None = None
    chain_pending: bool = False
    watchdog: _Pending | None = None
    section: str | None = None  # torchelastic summary: "root" / "other"
    entry: _ElasticEntry | None = None


def _excerpt(line: str) -> str:
    return line.rstrip()[:EXCERPT_CHARS]


class _FileParser:
    """Feeds decoded lines through the matchers; resolves ranks and hosts at the end."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.policy = ctx.clock
        self.pending: list[_Pending] = []
        self.streams: dict[tuple[int | None, int | None, int | None], _Stream] = {}
        # the latest timestamp text seen (parsed only when an event needs it)
        self.time_src: str | None = None
        self.own_time = False  # the current line carries time_src itself
        self._parsed: tuple[str | None, tuple[datetime, Clock] | None] = (None, None)
        self.lines_read = 0
        # sets: NCCL_DEBUG=INFO repeats the same host / pid / rank on thousands of lines
        self.comm_inits: set[tuple[str, int, int, int, int | None, str | None, LinePrefix]] = set()
        self.prefixed_hosts: set[tuple[LinePrefix, str, int, str]] = set()  # prefix, host, pid, dev
        self.pairs: set[tuple[int | None, int, int]] = set()  # (label, local, global)
        self.elastic_hosts: dict[int, str] = {}  # rank -> host from torchelastic summaries
        self.locals_seen: set[int] = set()
        self.labels_are_nodes = False
        self.srun_task_hosts: dict[int, str] = {}
        self.prefixed = False  # any line carried a rank/launcher prefix
        self.world: set[int] = set()
        self.facts: dict[str, Any] = {}
        self.watchdog_seen: set[tuple[Any, ...]] = set()
        # per line
        self.lineno = 0
        self.line = ""
        self.prefix = LinePrefix()

    # -- feeding

    def feed(self, lineno: int, line: str | None, ts_line: str | None) -> None:
        if ts_line:
            runtime_ts, ts_line = _strip_runtime_ts(ts_line)
            m = _HEAD_TS.match(split_prefix(ts_line)[1])
            if m or runtime_ts:
                self.time_src = m["ts"] if m else runtime_ts
        if line is None:
            return
        runtime_ts, stripped = _strip_runtime_ts(line)
        prefix, content = split_prefix(stripped)
        m = _HEAD_TS.match(content)
        self.own_time = m is not None or runtime_ts is not None
        if m:
            self.time_src = m["ts"]
        elif runtime_ts:
            self.time_src = runtime_ts
        self.lineno, self.line, self.prefix = lineno, line, prefix
        self._note_prefix(prefix)
        self._facts(content)
        stream = self.streams.setdefault(prefix.key, _Stream())
        if self._traceback(stream, content):
            return
        if self._elastic_block(stream, content):
            return
        self._watchdog_continuation(stream, content)
        self._match(stream, content)

    def _note_prefix(self, p: LinePrefix) -> None:
        if p != LinePrefix():
            self.prefixed = True
        if p.local is not None:
            self.locals_seen.add(p.local)
            if p.label is not None:
                self.labels_are_nodes = True
            if p.rank is not None:
                self.pairs.add((p.label, p.local, p.rank))

    def _facts(self, content: str) -> None:
        if "orld" in content and (m := _WORLD.search(content)):
            self.world.add(int(m[1]))
        if "NCCL version" in content and (m := _NCCL_VERSION.search(content)):
            self.facts.setdefault("nccl_version", m[1])

    def current_time(self) -> tuple[datetime, Clock] | None:
        """The current line's own time, else the last one before it (Clock.carried)."""
        if self.time_src is None:
            return None
        if self._parsed[0] != self.time_src:
            self._parsed = (self.time_src, parse_time_text(self.time_src, self.policy))
        hit = self._parsed[1]
        if hit is None or self.own_time:
            return hit
        return hit[0], Clock.carried

    def add(self, kind: EventKind, role: Role, category: str | None, summary: str,
            detail: dict[str, Any] | None = None, **kw: Any) -> _Pending:
        ts, clock = self.current_time() or (None, Clock.none)
        p = _Pending(kind, role, category, summary, kw.pop("line_start", self.lineno),
                     kw.pop("line_end", self.lineno), kw.pop("excerpt", _excerpt(self.line)),
                     kw.pop("prefix", self.prefix), ts, clock, detail or {}, **kw)
        self.pending.append(p)
        return p

    # -- tracebacks

    def _traceback(self, stream: _Stream, content: str) -> bool:
        stripped = content.strip()
        if stripped.startswith(_CHAIN):
            stream.chain_pending = True
            return True
        if stripped.startswith(("Traceback (most recent call last)",
                                "Original Traceback (most recent call last)")):
            stream.tb = _Traceback(self.lineno, chained=stream.chain_pending)
            stream.chain_pending = False
            return True
        tb = stream.tb
        if tb is None:
            return False
        fr = parse_frame(content)
        if fr:
            tb.frames.append(fr[0])
            tb.frame_indent = fr[1]
            return True
        exc = parse_exception_line(content)
        if exc and (not tb.frames or exc[2] <= tb.frame_indent):
            stream.tb = None
            self._emit_traceback(tb, exc[0], exc[1])
            return True
        tb.lines_seen += 1
        if tb.lines_seen > 400:
            stream.tb = None  # never saw its exception line
        return content[:1].isspace() or not stripped

    def _emit_traceback(self, tb: _Traceback, exc_type: str, message: str) -> _Pending:
        v = classify_exception(exc_type, message)
        detail = {"exc_type": exc_type, "message": message[:MESSAGE_CHARS],
                  "traceback_start_line": tb.start, **frames_detail(tb.frames), **v.detail}
        role = v.role
        if tb.chained:
            detail["chained"] = True
            if v.kind == EventKind.python_exception:
                role = Role.symptom  # raised while handling the original one
        if v.kind == EventKind.cuda_oom:
            summary = oom_summary(v.detail)
        elif v.kind == EventKind.cuda_error:
            summary = f"CUDA error: {v.detail['cuda_error']}"
        else:
            summary = (f"{exc_type}: {message}" if message else exc_type)[:200]
        kw: dict[str, Any] = {"line_start": tb.start}
        if tb.entry is not None:
            tb.entry.exc = (exc_type, message)
            detail["via"] = "torchelastic_summary"
            kw.update(self._entry_identity(tb.entry))
        p = self.add(v.kind, role, v.category, summary, detail, **kw)
        if tb.entry is not None and tb.entry.fields.get("time"):
            t = parse_time_text(tb.entry.fields["time"], self.policy)
            if t:
                p.ts, p.clock = t
        return p

    # -- torchelastic ChildFailedError summary

    def _elastic_block(self, stream: _Stream, content: str) -> bool:
        s = content.strip()
        if s == "Root Cause:" or s.startswith("Root Cause (first observed failure)"):
            self._flush_entry(stream)
            stream.section = "root"
            return True
        if s == "Failures:":
            self._flush_entry(stream)
            stream.section = "other"
            return True
        if stream.section is None:
            return False
        if s.startswith("===") or s.startswith("---"):
            self._flush_entry(stream)
            if s.startswith("==="):
                stream.section = None
            return True
        m = _ELASTIC_FIELD.match(content)
        if not m:
            return self._elastic_msg(stream, content)
        key, val = m["key"].strip(), m["val"].strip()
        if key == "time" or stream.entry is None:
            self._flush_entry(stream)
            stream.entry = _ElasticEntry(stream.section == "root", self.lineno, self.lineno,
                                         self.prefix, _excerpt(self.line))
        entry = stream.entry
        entry.fields[key] = val
        entry.end = self.lineno
        if key == "traceback" and val.startswith("Traceback"):
            stream.tb = _Traceback(self.lineno, entry=entry)
        return True

    def _elastic_msg(self, stream: _Stream, content: str) -> bool:
        """The exception inside a torch 1.9-1.10 summary's "msg:" JSON, as its traceback line."""
        entry = stream.entry
        if entry is None or "msg" not in entry.fields:
            return False
        entry.end = self.lineno
        m = _ELASTIC_MSG_JSON.match(content)
        if m and entry.exc is None and (exc := parse_exception_line(m["text"])):
            self._emit_traceback(_Traceback(self.lineno, entry=entry), exc[0], exc[1])
        return True

    def _entry_identity(self, e: _ElasticEntry) -> dict[str, Any]:
        out: dict[str, Any] = {"prefix": e.prefix}
        if m := re.match(r"(\d+)(?: \(local_rank: (\d+)\))?", e.fields.get("rank", "")):
            out["rank"] = int(m[1])
            if m[2] is not None:
                self.pairs.add((e.prefix.label, int(m[2]), int(m[1])))
        if host := e.fields.get("host"):
            out["node"] = host
        return out

    def _flush_entry(self, stream: _Stream) -> None:
        e = stream.entry
        stream.entry = None
        if e is None or not e.fields:
            return
        if e.prefix.label is not None:
            self.labels_are_nodes = True
        ident = self._entry_identity(e)
        if "rank" in ident and "node" in ident:
            self.elastic_hosts[ident["rank"]] = ident["node"]
        detail: dict[str, Any] = {"root_cause": e.root, "host": e.fields.get("host")}
        if e.root and "rank" in ident:
            detail["root_rank"] = ident["rank"]
        if m := re.match(r"(-?\d+)(?: \(pid: (\d+)\))?", e.fields.get("exitcode", "")):
            detail.update(exit_code_detail(int(m[1])))
            if m[2]:
                detail["pid"] = int(m[2])
        if m := re.search(r"local_rank: (\d+)", e.fields.get("rank", "")):
            detail["local_rank"] = int(m[1])
        for key in ("time", "error_file"):
            if e.fields.get(key) and e.fields[key] != "<N/A>":
                detail[key] = e.fields[key]
        tb = e.fields.get("traceback", "")
        if e.exc:
            detail["exc_type"], detail["message"] = e.exc[0], e.exc[1][:MESSAGE_CHARS]
        elif tb and not tb.startswith("Traceback"):
            detail["traceback"] = tb[:MESSAGE_CHARS]
        category = "application_error" if detail.get("signal_name") in ("SIGSEGV", "SIGBUS") \
            else None
        who = f"rank {ident['rank']}" if "rank" in ident else "a worker"
        code = detail.get("exitcode")
        sig = f" ({detail['signal_name']})" if detail.get("signal_name") else ""
        first = "first observed failure" if e.root else "failure"
        summary = f"torchelastic {first}: {who} exited with {code}{sig}"
        p = self.add(EventKind.elastic_failure, Role.symptom, category, summary, detail,
                     line_start=e.start, line_end=e.end, excerpt=e.excerpt, **ident)
        if t := parse_time_text(e.fields.get("time", ""), self.policy):
            p.ts, p.clock = t

    # -- everything else, one line at a time

    def _watchdog_continuation(self, stream: _Stream, content: str) -> None:
        p = stream.watchdog
        if p is None:
            return
        if self.lineno - p.line_end > 3:
            stream.watchdog = None
            return
        changed = False
        if "seq_num" not in p.detail and "op_type" not in p.detail and (
                m := _WORKNCCL.search(content)):
            p.detail.update(_work_fields(m["body"]))
            changed = True
        if "ran_ms" not in p.detail and (m := _RAN_FOR.search(content)):
            p.detail["ran_ms"] = int(m["ms"])
            changed = True
        if changed:
            p.line_end = self.lineno
            p.summary = _watchdog_summary(p.detail)

    def _match(self, stream: _Stream, c: str) -> None:
        for matcher in (self._m_watchdog, self._m_progress, self._m_nccl_line, self._m_ib,
                        self._m_kernel, self._m_oom, self._m_cuda, self._m_socket, self._m_conn,
                        self._m_nccl_code, self._m_slurm, self._m_elastic_agent, self._m_crash,
                        self._m_bare_exception):
            if matcher(stream, c):
                return

    def _m_watchdog(self, stream: _Stream, c: str) -> bool:
        if "atchdog" not in c and "eartbeat" not in c and "process down" not in c \
                and "NCCL operations have failed" not in c:
            return False
        pg = _pg_detail(c)
        if _WATCHDOG.search(c):
            d = dict(pg)
            if m := _WORKNCCL.search(c):
                d.update(_work_fields(m["body"]))
            if m := _RAN_FOR.search(c):
                d["ran_ms"] = int(m["ms"])
            key = (self.prefix.key, pg.get("pg_rank"), d.get("seq_num"), d.get("op_type"))
            if d.get("seq_num") is not None and key in self.watchdog_seen:
                return True  # the same timeout again (e.g. in terminate's what())
            self.watchdog_seen.add(key)
            stream.watchdog = self.add(EventKind.nccl_watchdog_timeout, Role.symptom, "hang",
                                       _watchdog_summary(d), d, msg_rank=_msg_rank(pg))
            return True
        if m := _STUCK.search(c):
            d = {**pg, "stuck_s": int(m["s"]), "heartbeat": True}
            self.add(EventKind.nccl_watchdog_timeout, Role.symptom, "hang",
                     f"ProcessGroupNCCL watchdog stuck for {m['s']} s", d, msg_rank=_msg_rank(pg))
            return True
        if "Heartbeat monitor timed out" in c:
            self.add(EventKind.nccl_watchdog_timeout, Role.symptom, "hang",
                     "ProcessGroupNCCL heartbeat monitor timed out",
                     {**pg, "heartbeat": True}, msg_rank=_msg_rank(pg))
            return True
        if "terminated with exception" in c:
            # a CUDA error found by the watchdog is reported by the CUDA matcher; a timeout
            # here repeats the watchdog line already seen
            return classify_cuda_error(c) is None
        if "NCCL operations have failed" in c or "taking the entire process down" in c:
            what = "abort_notice" if "process down" in c else "failed_notice"
            self.add(EventKind.other, Role.symptom, None,
                     "ProcessGroupNCCL is taking the process down" if what == "abort_notice"
                     else "ProcessGroupNCCL: some NCCL operations failed or timed out",
                     {**pg, "what": what}, msg_rank=_msg_rank(pg))
            return True
        return False

    def _m_progress(self, stream: _Stream, c: str) -> bool:
        if "ast enqueued" not in c:
            return False
        m = _PROGRESS.search(c)
        if not m:
            return False
        d: dict[str, Any] = {**_pg_detail(c), "last_enqueued": int(m["enq"]),
                             "last_completed": int(m["comp"])}
        if m["started"] is not None:
            d["last_started"] = int(m["started"])
        if w := _AT_WORK.search(c):
            d["work"] = int(w["work"])
        if f := _DUMP_FROM.search(c):
            d["timeout_from_rank"] = int(f["rank"]) if f["rank"] else "self"
        s = f"NCCL progress: last enqueued {d['last_enqueued']}, completed {d['last_completed']}"
        if "pg" in d:
            s += f" (PG {d['pg']})"
        self.add(EventKind.collective_progress, Role.context, None, s, d,
                 msg_rank=_msg_rank(_pg_detail(c)))
        return True

    def _m_nccl_line(self, stream: _Stream, c: str) -> bool:
        if "NCCL " not in c:
            return False
        m = _NCCL_LINE.search(c)
        if not m:
            return False
        host, pid, dev = m["host"], int(m["pid"]), m["dev"]
        self.prefixed_hosts.add((self.prefix, host, pid, dev))
        msg = m["msg"]
        if ci := _COMM_INIT.search(msg):
            self.comm_inits.add((host, pid, int(ci["rank"]), int(ci["n"]),
                                    int(ci["cuda"]) if ci["cuda"] else int(dev), ci["bus"],
                                    self.prefix))
            return True
        if m["lvl"] not in ("WARN", "ERROR", "ABORT"):
            if ip := _OWN_IP.search(msg):
                # the host's own address: lets a peer named by IP in an IB error be found
                ips = self.facts.setdefault("host_ips", {}).setdefault(host, [])
                if ip["ip"] not in ips:
                    ips.append(ip["ip"])
            return True
        base = {"host": host, "pid": pid, "device": int(dev)}
        kw = {"host_pid": (host, pid), "node": host}
        if self._ib(msg, base, kw):
            return True
        if self._socket(msg, base, kw):
            return True
        if dup := nccl_vocab.DUPLICATE_GPU.search(msg):
            self.add(EventKind.nccl_error, Role.primary, "application_error",
                     f"NCCL invalid usage: ranks {dup['a']} and {dup['b']} on one GPU",
                     {**base, "nccl_code": "ncclInvalidUsage", "device_bus": dup["dev"]}, **kw)
            return True
        if _CONN.search(msg):
            self._conn(msg, base, kw)
            return True
        if cuda := classify_cuda_error(msg):
            self._cuda(cuda, base, kw)
            return True
        return True

    def _socket(self, text: str, base: dict[str, Any], kw: dict[str, Any]) -> bool:
        if sock := nccl_vocab.SOCKET_UNREACHABLE.search(text):
            # the socket transport could not reach its peer at all: the path is down, not
            # the peer process gone (that is a reset / closed by peer)
            self.add(EventKind.nccl_error, Role.primary, "network_fault",
                     f"NCCL socket to {sock['peer']} failed: {sock['why'].strip()}",
                     {**base, "peer": sock["peer"], "reason": sock["why"].strip(),
                      "weight": 0.6}, **kw)
            return True
        if conf := nccl_vocab.SOCKET_CONFIG.search(text):
            # no usable interface for the bootstrap / socket transport: the node's network
            # configuration, surfacing as "unhandled system error"
            reason = nccl_vocab.socket_config_reason(conf)
            self.add(EventKind.nccl_error, Role.primary, "network_fault",
                     f"NCCL network configuration: {reason}",
                     {**base, "reason": reason, "configuration": True, "weight": 0.6}, **kw)
            return True
        return False

    def _m_socket(self, stream: _Stream, c: str) -> bool:
        if "ocket" not in c:
            return False
        return self._socket(c, {}, {})

    def _m_kernel(self, stream: _Stream, c: str) -> bool:
        """A kernel line (OOM kill, Xid) forwarded into the job's output or pasted there."""
        if "NVRM: " not in c and "process" not in c and "oom-kill" not in c:
            return False
        f = kernel_log.classify(kernel_log.split_prefix(c, ClockPolicy()).msg)
        if f is None or f.role == Role.context:
            return False
        self.add(f.kind, f.role, f.category, f.summary, {**f.detail, "forwarded_kernel": True})
        return True

    def _ib(self, text: str, base: dict[str, Any], kw: dict[str, Any]) -> bool:
        if m := _IB_COMPLETION.search(text):
            status = int(m["status"])
            name = m["sname"] or (f"IBV_WC_{_IBV_STATUS[status]}"
                                  if status < len(_IBV_STATUS) else None)
            d = {**base, "peer": m["peer"] or None, "status": status, "status_name": name,
                 "vendor_err": int(m["vendor"]), "opcode": int(m["opcode"])}
            for k in ("port", "len"):
                if m[k]:
                    d[k] = int(m[k])
            if m["dir"]:
                d["direction"] = m["dir"]
            if m["hca"]:
                d["hca"] = m["hca"]
            # a flush error only follows an earlier error on the same queue pair
            role = Role.symptom if status == 5 else Role.primary
            peer = f" from {d['peer']}" if d["peer"] else ""
            self.add(EventKind.ib_error, role, "network_fault",
                     f"InfiniBand completion error {name or status}{peer} (vendor err "
                     f"{d['vendor_err']})", d, **kw)
            return True
        if ev := nccl_vocab.ASYNC_EVENT.search(text):
            if not nccl_vocab.async_event_is_fault(ev["event"]):
                return True  # routine fabric news ("client reregistration", "port active")
            what = ev["event"].strip()
            self.add(EventKind.ib_error, Role.primary, "network_fault",
                     f"InfiniBand async event: {what}", {**base, "ib_error": what}, **kw)
            return True
        if m := _IB_OTHER.search(text):
            what = m["name"] or m["async"] or m["call"]
            self.add(EventKind.ib_error, Role.primary, "network_fault",
                     f"InfiniBand error: {what.strip()}", {**base, "ib_error": what.strip()}, **kw)
            return True
        return False

    def _conn(self, text: str, base: dict[str, Any], kw: dict[str, Any]) -> None:
        reason = _CONN.search(text)
        assert reason is not None
        d = {**base, "reason": reason[0]}
        if peer := re.search(r"(?:from|to) (\S+?<\d+>|\d+\.\d+\.\d+\.\d+\S*)", text):
            d["peer"] = peer[1]
        self.add(EventKind.connection_reset, Role.symptom, "network_fault",
                 f"Connection lost: {reason[0]}", d, **kw)

    def _cuda(self, cuda: tuple[str, str, str], base: dict[str, Any],
              kw: dict[str, Any]) -> None:
        what, category, confidence = cuda
        if _OOM.search(what) or what == "out of memory":
            self.add(EventKind.cuda_oom, Role.primary, "gpu_oom", "CUDA out of memory",
                     {**base, "cuda_error": what}, **kw)
            return
        self.add(EventKind.cuda_error, Role.primary, category, f"CUDA error: {what}",
                 {**base, "cuda_error": what, "confidence": confidence}, **kw)

    def _m_ib(self, stream: _Stream, c: str) -> bool:
        if "NET/IB" not in c and "IBV_WC_" not in c:
            return False
        return self._ib(c, {}, {})

    def _m_oom(self, stream: _Stream, c: str) -> bool:
        if "emory" not in c and "OutOfMemory" not in c:
            return False
        if not _OOM.search(c):
            return False
        d = oom_detail(c)
        if _HANDLED.search(c):  # a warning about an OOM the program caught and recovered from
            self.add(EventKind.cuda_oom, Role.context, None, oom_summary(d) + " (handled)", d)
            return True
        self.add(EventKind.cuda_oom, Role.primary, "gpu_oom", oom_summary(d), d)
        return True

    def _m_cuda(self, stream: _Stream, c: str) -> bool:
        if "CUDA" not in c and "Cuda" not in c and "cuda" not in c:
            return False
        cuda = classify_cuda_error(c)
        if not cuda:
            return False
        self._cuda(cuda, {}, {})
        return True

    def _m_conn(self, stream: _Stream, c: str) -> bool:
        if not any(k in c for k in _CONN_KEYS) or not _CONN.search(c):
            return False
        self._conn(c, {}, {})
        return True

    def _m_nccl_code(self, stream: _Stream, c: str) -> bool:
        if "nccl" not in c and "NCCL" not in c:
            return False
        for code, rx, role, category in _NCCL_CODES:
            if rx.search(c):
                self.add(EventKind.nccl_error, role, category, f"NCCL error: {code}",
                         {"nccl_code": code})
                return True
        return False

    def _m_slurm(self, stream: _Stream, c: str) -> bool:
        if "srun" not in c and "slurmstepd" not in c and "CANCELLED" not in c:
            return False
        hit = False
        if m := _SLURM_OOM.search(c):
            job = m["step"].split(".")[0]
            self.facts.setdefault("slurm_job_id", job)
            self.add(EventKind.cgroup_oom, Role.primary, "host_oom",
                     f"Slurm cgroup OOM kill in step {m['step']}",
                     {"count": int(m["n"]), "step": m["step"], "job_id": job})
            hit = True
        elif _SLURM_MEMLIMIT.search(c):
            self.add(EventKind.cgroup_oom, Role.primary, "host_oom",
                     "Slurm: memory limit exceeded", {"memory_limit": True})
            hit = True
        if m := _SRUN_TASK.search(c):
            self._srun_task(m)
            hit = True
        if m := _SRUN_NODEFAIL.search(c):
            self.add(EventKind.node_fail, Role.primary, "node_failure",
                     f"Slurm: node failure on {m['node']}", {"node": m["node"]}, node=m["node"])
            hit = True
        if m := _CANCELLED.search(c):
            self._cancelled(m)
            hit = True
        return hit

    def _srun_task(self, m: re.Match[str]) -> None:
        what, node, tasks = m["what"].strip(), m["node"], m["tasks"].strip()
        d: dict[str, Any] = {"node": node, "tasks": tasks, "what": what}
        kw: dict[str, Any] = {"node": node}
        if tasks.isdigit():
            d["task"] = int(tasks)
            kw["prefix"] = LinePrefix(label=int(tasks))
        for task in _task_ids(tasks):  # srun's task ids on that node ("task 4", "tasks 8-15")
            self.srun_task_hosts.setdefault(task, node)
        if what == "Out Of Memory":
            self.add(EventKind.cgroup_oom, Role.primary, "host_oom",
                     f"srun: task {tasks} on {node} ran out of memory", d, **kw)
        elif what.startswith(("Segmentation fault", "Bus error")):
            self.add(EventKind.segfault, Role.primary, "application_error",
                     f"srun: task {tasks} on {node}: {what}", d, **kw)
        elif what.startswith(("Killed", "Terminated", "Aborted")):
            sig = {"K": "SIGKILL", "T": "SIGTERM", "A": "SIGABRT"}[what[0]]
            self.add(EventKind.signal, Role.symptom, None,
                     f"srun: task {tasks} on {node}: {what}", {**d, "signal_name": sig}, **kw)
        else:
            if em := re.match(r"Exited with exit code (\d+)", what):
                d.update(exit_code_detail(int(em[1])))
            self.add(EventKind.exit_status, Role.symptom, None,
                     f"srun: task {tasks} on {node}: {what}", d, **kw)

    def _cancelled(self, m: re.Match[str]) -> None:
        reason = (m["reason"] or "").strip()
        d: dict[str, Any] = {"id": m["id"], "node": m["node"], "at": m["ts"]}
        if reason:
            d["reason"] = reason
        job = m["id"].split(".")[0]
        if job.isdigit():
            self.facts.setdefault("slurm_job_id", job)
        what = m["what"].lower()
        summary = f"Slurm {what} {m['id']} cancelled" + (f" due to {reason.lower()}"
                                                          if reason else "")
        if reason.startswith("TIME LIMIT"):
            kind, role, cat = EventKind.time_limit, Role.primary, "time_limit"
        elif reason.startswith("PREEMPTION"):
            kind, role, cat = EventKind.preempted, Role.primary, "preempted"
        elif reason.startswith("NODE FAIL"):
            kind, role, cat = EventKind.node_fail, Role.primary, "node_failure"
        else:
            kind = EventKind.job_state if what == "job" else EventKind.step_state
            role, cat = Role.symptom, None
        # "ON <node>" is where the reporting slurmstepd ran; a failed node cannot report, so
        # for a node failure it is not the failed node (srun's "Node failure on X" names that)
        node = None if kind == EventKind.node_fail else m["node"]
        if node is None:
            d["reported_on"] = d.pop("node")
        p = self.add(kind, role, cat, summary, d, node=node)
        if t := parse_time_text(m["ts"], self.policy):
            p.ts, p.clock = t

    def _m_elastic_agent(self, stream: _Stream, c: str) -> bool:
        if "exitcode" not in c and "signal" not in c:
            return False
        if m := _ELASTIC_FAILED.search(c):
            d = {**exit_code_detail(int(m["code"])), "local_rank": int(m["local"]),
                 "pid": int(m["pid"]), "binary": m["bin"]}
            sig = f" ({d['signal_name']})" if d.get("signal_name") else ""
            self.add(EventKind.exit_status, Role.symptom, None,
                     f"torchelastic: local rank {m['local']} failed with exit code "
                     f"{m['code']}{sig}", d, local=int(m["local"]))
            self._agent_line()
            return True
        if m := _CLOSING.search(c):
            self.add(EventKind.signal, Role.symptom, None,
                     f"torchelastic sent {m['sig']} to pid {m['pid']}",
                     {"pid": int(m["pid"]), "signal_name": m["sig"], "sender": "torchelastic"})
            self._agent_line()
            return True
        if m := _DEATH.search(c):
            sig = m["sig"] if not m["sig"].isdigit() else signal_name(int(m["sig"])) or m["sig"]
            self.add(EventKind.signal, Role.symptom, None,
                     f"torchelastic agent received {sig}, shutting down workers",
                     {"signal_name": sig, "receiver": "torchelastic"})
            self._agent_line()
            return True
        if m := _GOT_SIGNAL.search(c):
            sig = signal_name(int(m["sig"])) or m["sig"]
            self.add(EventKind.signal, Role.symptom, None, f"process {m['pid']} got {sig}",
                     {"pid": int(m["pid"]), "signal": int(m["sig"]), "signal_name": sig})
            return True
        return False

    def _agent_line(self) -> None:
        if self.prefix.label is not None and self.prefix.local is None:
            self.labels_are_nodes = True

    def _m_crash(self, stream: _Stream, c: str) -> bool:
        if not any(k in c for k in _CRASH_KEYS):
            return False
        if m := _SEGV.search(c):
            what = m["fatal"] or m[0].strip("* ")
            if what == "Aborted":
                self.add(EventKind.signal, Role.symptom, None, "Fatal Python error: Aborted",
                         {"signal_name": "SIGABRT"})
                return True
            sig = "SIGBUS" if "Bus" in what else "SIGFPE" if "Floating" in what else "SIGSEGV"
            self.add(EventKind.segfault, Role.primary, "application_error",
                     f"Process crashed: {what}", {"signal_name": sig})
            return True
        if _ABORTED.search(c):
            self.add(EventKind.signal, Role.symptom, None, "Process aborted (core dumped)",
                     {"signal_name": "SIGABRT"})
            return True
        if _KILLED.search(c):
            self.add(EventKind.signal, Role.symptom, None, "Process killed",
                     {"signal_name": "SIGKILL"})
            return True
        return False

    def _m_bare_exception(self, stream: _Stream, c: str) -> bool:
        """An exception line with no traceback above it (a log that kept only its last line):
        the same class as with its traceback, but one line a decoy could print, so it weighs
        less."""
        exc = parse_exception_line(c)
        if exc is None or exc[2] > 0:
            return False
        if exc[1].startswith("Caught "):  # PyTorch's ExceptionWrapper: the original follows
            return True
        p = self._emit_traceback(_Traceback(self.lineno), exc[0], exc[1])
        p.detail.update(without_traceback=True, weight=BARE_EXCEPTION_WEIGHT)
        return True

    # -- the end: ranks, hosts, GPUs

    def finish(self) -> ParseResult:
        for stream in self.streams.values():
            self._flush_entry(stream)
        world = max((n for *_, n, _c, _b, _p in self.comm_inits), default=None)
        world_size = max(self.world | ({world} if world else set()), default=None)
        res = ParseResult(format=FORMAT, lines_read=self.lines_read)
        pid_rank: dict[tuple[str, int], int] = {}
        for host, pid, rank, n, cuda, bus, prefix in sorted(self.comm_inits, key=str):
            if n != world:
                continue
            pid_rank[(host, pid)] = rank
            res.rank_hosts.setdefault(rank, host)
            res.rank_gpus.setdefault(rank, bus_id_to_pci(bus) if bus else str(cuda))
            if prefix.local is not None:
                self.pairs.add((prefix.label, prefix.local, rank))
        offsets = _offsets(self.pairs)
        single_node = bool(world_size and self.locals_seen
                           and max(self.locals_seen) + 1 == world_size)
        if pid_rank:  # lets a kernel OOM kill's pid name its rank
            res.facts["rank_pids"] = {f"{h}:{pid}": r for (h, pid), r in pid_rank.items()}
        # one process's log (no prefixes, one world communicator): its rank is the file's
        sole = set(pid_rank.values())
        file_rank = next(iter(sole)) if len(sole) == 1 and not self.prefixed else None
        resolve = _RankResolver(self.ctx, offsets, single_node, self.labels_are_nodes, pid_rank,
                                file_rank)
        for prefix, host, pid, dev in sorted(self.prefixed_hosts, key=str):
            rank = resolve.prefix_rank(prefix)
            if rank is None:
                rank = pid_rank.get((host, pid))
            if rank is not None:
                res.rank_hosts.setdefault(rank, host)
                res.rank_gpus.setdefault(rank, dev)
        if not self.labels_are_nodes and self.srun_task_hosts:
            # srun task ids are ranks only when srun launched one task per rank: a weaker
            # source than NCCL's own lines, used by the analysis only to fill gaps
            res.facts["srun_task_hosts"] = {str(k): v for k, v in self.srun_task_hosts.items()}
        for rank, host in self.elastic_hosts.items():
            res.rank_hosts.setdefault(rank, host)  # torchelastic's host is socket.getfqdn()
        if self.labels_are_nodes and self.locals_seen:
            # srun -l running one torchrun per node: a node task's ranks share its host, so
            # one rank's known host places the others, also one that never printed a line
            per_node = max(self.locals_seen) + 1
            for offset in offsets.values():
                ranks = range(offset, offset + per_node)
                hosts = {res.rank_hosts[r] for r in ranks if r in res.rank_hosts}
                if len(hosts) == 1:
                    for r in ranks:
                        res.rank_hosts.setdefault(r, next(iter(hosts)))
        for p in self.pending:
            res.events.append(self._event(p, resolve, res))
        if world_size:
            res.facts["world_size"] = world_size
        res.facts.update(self.facts)
        ranks = sorted({e.rank for e in res.events if e.rank is not None} | set(res.rank_hosts))
        if ranks:
            res.facts["ranks_seen"] = ranks
        if offsets:
            res.facts["local_rank_offsets"] = {str(k): v for k, v in offsets.items()}
        return res

    def _event(self, p: _Pending, resolve: _RankResolver, res: ParseResult) -> Event:
        rank = p.rank if p.rank is not None else resolve.rank(p)
        detail = dict(p.detail)
        local = p.local if p.local is not None else p.prefix.local
        if local is not None:
            detail.setdefault("local_rank", local)
        if p.prefix.label is not None and rank != p.prefix.label:
            detail.setdefault("task", p.prefix.label)
        if rank is None and p.msg_rank is not None and self.ctx.rank_hint is None:
            rank = p.msg_rank
            detail["rank_from"] = "message"
        node = p.node or (res.rank_hosts.get(rank) if rank is not None else None) \
            or self.ctx.node_hint
        gpu = res.rank_gpus.get(rank) if rank is not None else None
        if gpu is None and detail.get("gpu_index") is not None:
            gpu = str(detail["gpu_index"])
        return Event(kind=p.kind, role=p.role, category=p.category, ts=p.ts, clock=p.clock,
                     node=node, rank=rank, gpu=gpu, summary=p.summary,
                     locator=Locator(path=self.ctx.rel_path, line_start=p.line_start,
                                     line_end=p.line_end),
                     excerpt=p.excerpt, detail=detail)


def _work_fields(body: str) -> dict[str, Any]:
    names = {"SeqNum": "seq_num", "OpType": "op_type", "NumelIn": "numel_in",
             "NumelOut": "numel_out", "Timeout(ms)": "timeout_ms"}
    out: dict[str, Any] = {}
    for part in body.split(","):
        key, _, val = part.strip().partition("=")
        if key in names and val:
            out[names[key]] = int(val) if val.lstrip("-").isdigit() else val
    return out


def _watchdog_summary(d: dict[str, Any]) -> str:
    s = "NCCL watchdog timeout"
    if d.get("op_type"):
        s += f": {d['op_type']}"
    if d.get("seq_num") is not None:
        s += f" SeqNum={d['seq_num']}"
    if d.get("ran_ms") is not None:
        s += f" ran {d['ran_ms']} ms"
    if d.get("timeout_ms") is not None:
        s += f" (timeout {d['timeout_ms']} ms)"
    return s


def _pg_detail(text: str) -> dict[str, Any]:
    m = _PG_TAG.search(text)
    if not m:
        return {}
    d: dict[str, Any] = {"pg_rank": int(m["rank"])}
    if m["pg"] is not None:
        d["pg"] = int(m["pg"])
    if m["guid"]:
        d["pg_guid"] = m["guid"]
    return d


def _msg_rank(pg: dict[str, Any]) -> int | None:
    """A PG-local rank that is also global: PG 0 / the default PG, or an unlabelled "[Rank N]"."""
    if "pg_rank" not in pg:
        return None
    if pg.get("pg") in (None, 0) or "default_pg" in str(pg.get("pg_guid", "")):
        return pg["pg_rank"]
    return None


def _offsets(pairs: set[tuple[int | None, int, int]]) -> dict[int | None, int]:
    """global - local per srun task (node), where every piece of evidence agrees."""
    seen: dict[int | None, set[int]] = {}
    for label, local, rank in pairs:
        seen.setdefault(label, set()).add(rank - local)
    return {label: next(iter(v)) for label, v in seen.items() if len(v) == 1}


@dataclass(slots=True)
class _RankResolver:
    ctx: ParseContext
    offsets: dict[int | None, int]
    single_node: bool
    labels_are_nodes: bool
    pid_rank: dict[tuple[str, int], int]
    file_rank: int | None = None

    def local_to_global(self, label: int | None, local: int) -> int | None:
        if label in self.offsets:
            return local + self.offsets[label]
        if self.single_node:
            return local
        return None

    def prefix_rank(self, p: LinePrefix) -> int | None:
        if p.rank is not None:
            return p.rank
        if p.local is not None:
            return self.local_to_global(p.label, p.local)
        if p.label is not None and not self.labels_are_nodes:
            return p.label
        return None

    def rank(self, p: _Pending) -> int | None:
        r = self.prefix_rank(p.prefix)
        if r is not None:
            return r
        if p.local is not None:
            r = self.local_to_global(p.prefix.label, p.local)
            if r is not None:
                return r
        if p.host_pid and p.host_pid in self.pid_rank:
            return self.pid_rank[p.host_pid]
        if p.prefix == LinePrefix() and p.local is None:
            return self.ctx.rank_hint if self.ctx.rank_hint is not None else self.file_rank
        return None


# ---------------------------------------------------------------------------------------------
# the parser

_SNIFF_POSITIVE = re.compile(
    r"(?m)^\s*(?:\d{1,6}: )?\[(?:rank|default)\d+\]:|Traceback \(most recent call last\)|"
    r"[\w.\-]+:\d+:\d+ \[\d+\] (?:\S+ )?NCCL (?:INFO|WARN)|NCCL WARN|ProcessGroupNCCL|"
    r"torch\.distributed|torchrun|ChildFailedError|^Root Cause(?: \(first observed failure\))?:|"
    r"srun: error|slurmstepd(?:-[\w.\-]+)?: error|"
    r"CUDA out of memory|Watchdog caught collective|NET/IB\s*:|"
    r"torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: |cuda runtime error \(\d+\)|"
    r"Fatal Python error: |DataLoader worker \(pid|socketStartConnect|ncclSocketInit|"
    r"WARN (?:Socket creation failed|Failed to open libibverbs|Duplicate GPU)|"
    r"^\s*(?:\w+\.)*[A-Z]\w*(?:Error|Exception): \S|"
    r"(?:Memory cgroup out of memory|Out of memory): Kill")
_KERNELISH = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? \S+ kernel:|"
    r"\d{4}-\d{2}-\d{2}T\S+ \S+ kernel:|\[\s*\d+\.\d+\] |kern\s*:\s*\w+\s*: |"
    r"\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d [\d:]+ \d{4}\] |kernel: |.*\bNVRM: )")
_KERNELISH_START = re.compile(_KERNELISH.pattern.removesuffix(r"|.*\bNVRM: )") + ")")
_SACCT = re.compile(r"(?m)^\s*JobID\s+JobName|^JobID\|JobName|^-{6,} -{6,}|^\s*PARTITION\s+AVAIL|"
                    r"^JobId=\d+ ")


# replacement characters (undecodable bytes) and control characters other than tab, line
# ends and ESC (colour codes)
_NOT_TEXT = re.compile("[\ufffd\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f]")


def _looks_text(head: str) -> bool:
    if not head or "\x00" in head[:4096]:
        return False
    sample = head[:4096]
    return len(_NOT_TEXT.findall(sample)) * 20 < len(sample)


class JobLogParser:
    format = FORMAT

    def sniff(self, head: str, name: str) -> bool:
        stripped = head.lstrip()
        if stripped.startswith("{") or re.match(r"\[\s*(?:[{\"\[\]]|$)", stripped):
            return False  # JSON
        if not _looks_text(head):
            return False
        lines = [ln.strip() for ln in head.splitlines()[:400] if ln.strip()]
        if not lines:
            return False
        if _SACCT.search(head[:8192]):
            return False
        # `.*\bNVRM: ` scans the whole line: only lines that hold the word can match it
        kernelish = sum(1 for ln in lines if (_KERNELISH_START if "NVRM: " not in ln
                                               else _KERNELISH).match(ln))
        if kernelish * 2 >= len(lines):
            return False
        return bool(_SNIFF_POSITIVE.search(head)) or rank_from_filename(name) is not None

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        fp = _FileParser(ctx)
        st = ScanState()
        try:
            for lineno, line, ts_line in scan_with_times(path, st):
                fp.feed(lineno, line, ts_line)
            fp.lines_read = st.lines
        except OSError as e:
            raise ParseError(f"cannot read {ctx.rel_path}: {e.strerror or e}") from e
        except (EOFError, zlib.error) as e:
            raise ParseError(f"{ctx.rel_path}: corrupt compressed file ({e})") from e
        return fp.finish()


PARSER = JobLogParser()


def _task_ids(text: str, limit: int = 4096) -> list[int]:
    """srun's task lists: "4", "8-15", "0,2,5-7"."""
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.extend(range(int(lo), int(hi or lo) + 1)[:limit])
    return out[:limit]
