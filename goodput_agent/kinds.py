"""Which of the three questions a bundle asks.

A question is answered from evidence: a failure from scheduler records and logs, a slowdown
from profiler traces, a latency rise from the serving engine's own metrics. The question's
words (matched as whole words, in any wording) choose among the kinds the bundle can answer;
when they point to several, or to none the bundle can answer, the evidence decides.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from pydantic import BaseModel

from goodput_agent.bundle import BundleFile, Inventory
from goodput_agent.core.incident import IncidentSpec
from goodput_agent.metrics.vllm_names import METRICS, Kind
from goodput_agent.parsing import job_log
from goodput_agent.parsing.base import ParseContext, ParseError
from goodput_agent.parsing.job_log.iterations import has_series
from goodput_agent.parsing.profile_table import has_profile_table
from goodput_agent.parsing.registry import (
    DECISIVE_SCANNED,
    FAILURE_FORMATS,
    METRICS_FORMATS,
    SERVING_LOG_FORMATS,
    decisive_lines,
)

KINDS = ("failure", "slowdown", "latency")
# when several kinds can be answered and the words do not single one out: every job has logs,
# traces and serving metrics are collected for a performance question
EVIDENCE_ORDER = KINDS
ASKED_AS = {"failure": "a failure", "slowdown": "a training slowdown",
             "latency": "an inference latency rise"}
_EVIDENCE = {"failure": "no scheduler record, job log or kernel log",
             "slowdown": "no profiler (Kineto) trace and no training log with its own "
                         "iteration times",
             "latency": "no serving-engine (vLLM) latency metrics or engine log"}


def _words(*alternatives: str) -> re.Pattern[str]:
    """Whole words or phrases only: "slower" is not "slo", "errors" is not "error" unless
    listed."""
    return re.compile(r"(?<![\w/])(?:" + "|".join(alternatives) + r")(?![\w/])", re.I)


_SHARED_PERF = (r"throughput", r"tokens?\s*/\s*s(?:ec)?", r"tokens per second", r"tok/s")
_ASKS = {
    "failure": _words(
        r"fail(?:s|ed|ing|ures?)?", r"crash(?:es|ed|ing)?", r"died", r"dies", r"dead",
        r"abort(?:s|ed|ing)?", r"hang(?:s|ing)?", r"hung", r"stall(?:s|ed)?", r"stuck",
        r"froze(?:n)?", r"freez(?:e|es|ing)", r"deadlock(?:s|ed)?", r"killed", r"oom",
        r"oom-?kill(?:ed|er)?", r"out of memory", r"errors?", r"exit(?:s|ed)?",
        r"exit code", r"time-?outs?", r"timed out", r"xids?", r"seg(?:mentation )?faults?",
        r"preempted", r"evicted", r"not responding"),
    "slowdown": _words(
        r"slow(?:s|ed|er|est|ing)?", r"slow-?downs?", r"step[- ]?times?", r"iteration times?",
        r"regress(?:ed|ion|ions)?", r"mfu", r"stragglers?", r"samples?\s*/\s*s(?:ec)?",
        r"it/s", r"tflops", *_SHARED_PERF),
    "latency": _words(
        r"latenc(?:y|ies)", r"ttft", r"time[- ]to[- ]first[- ]token", r"first token",
        r"itl", r"tpot", r"inter-?token", r"p\d{2,3}", r"slos?", r"slas?",
        r"queu(?:e|es|ed|eing|ing)", r"serving", r"inference", r"requests?\s*/\s*s(?:ec)?",
        r"rps", r"qps", r"prefill", r"decode", r"vllm", r"response times?",
        *_SHARED_PERF),
}

# the serving engine's latency histograms: a metrics file without one of them (DCGM alone,
# node exporters) cannot answer the latency question
_LATENCY_NAMES = tuple(sorted({n.encode() for m in METRICS.values() if m.kind is Kind.histogram
                               and m.key not in ("prompt_tokens", "output_tokens")
                               for n in m.names}))
_SCAN_BYTES = 1 << 20


class KindChoice(BaseModel):
    kind: str
    note: str | None = None  # why the asked kind was not the one answered


def asked_kinds(question: str | None) -> list[str]:
    """The kinds the question's words point to, in KINDS order."""
    return [k for k in KINDS if question and _ASKS[k].search(question)]


def asked_instead_of_failure(spec: IncidentSpec) -> list[str]:
    """What the incident asks about, in words (ASKED_AS), when that is not a failure; [] when
    it asks about a failure or names nothing."""
    asked = ([spec.kind] if spec.kind in KINDS else []) or asked_kinds(spec.question)
    return [] if not asked or "failure" in asked else [ASKED_AS[k] for k in asked]


def has_serving_metrics(path: Path) -> bool:
    """Whether the file names one of the serving engine's latency histograms (scanned in
    chunks that overlap by a name's length, so a name split across two chunks is found)."""
    keep = max(len(n) for n in _LATENCY_NAMES)
    try:
        with path.open("rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gz else path.open("rb")) as fh:
            tail = b""
            while block := fh.read(_SCAN_BYTES):
                buf = tail + block
                if any(n in buf for n in _LATENCY_NAMES):
                    return True
                tail = buf[-keep:]
    except (OSError, EOFError):
        return False
    return False


class _Evidence:
    """Whether the bundle can answer each kind, looked at only when asked (a serving-metrics
    search reads whole metrics files, so it is not done for a bundle answered from its logs)."""

    def __init__(self, inv: Inventory):
        self._inv = inv
        self.formats = {f.format for f in inv.files if not f.free_text}
        self._known: dict[str, bool] = {}

    def __call__(self, kind: str) -> bool:
        if kind not in self._known:
            self._known[kind] = self._look(kind)
        return self._known[kind]

    def crash_elsewhere(self) -> bool:
        """A decisive failure line (a CUDA OOM, an Xid, a kill) in a file of a format no failure
        tool reads (a serving engine's log) or that no format claims: a failure question is
        then answered."""
        root = Path(self._inv.root)
        return any(_starts_a_failure(root, f) for f in self._inv.files
                   if f.format in DECISIVE_SCANNED or f.free_text)

    def _look(self, kind: str) -> bool:
        if kind == "failure":
            return bool(self.formats & FAILURE_FORMATS)
        if kind == "slowdown":  # from traces, else from the training log's own series
            root = Path(self._inv.root)
            return "kineto_trace" in self.formats or any(
                has_series(root / f.rel_path, enough=2) for f in self._inv.of_format("job_log")
                if not f.free_text
            ) or any(has_profile_table(root / f.rel_path)
                     for f in self._inv.of_format("tool_report"))
        if self.formats & SERVING_LOG_FORMATS:
            return True
        root = Path(self._inv.root)
        return any(has_serving_metrics(root / f.rel_path)
                   for f in self._inv.of_format(*METRICS_FORMATS))


def _starts_a_failure(root: Path, f: BundleFile) -> bool:
    """Free text: any line that can start a failure; a serving log or config: only the
    decisive kinds (its own exceptions are a server's noise more often than its end)."""
    ctx = ParseContext(rel_path=f.rel_path)
    try:
        if f.free_text:
            return any(e.role.value == "primary"
                       for e in job_log.PARSER.parse(root / f.rel_path, ctx).events)
        return bool(decisive_lines(root / f.rel_path, ctx).events)
    except (OSError, ParseError):  # the tools say why it cannot be read
        return False


def choose_kind(inv: Inventory) -> KindChoice:
    can = _Evidence(inv)
    asked = [inv.incident.kind] if inv.incident.kind in KINDS else \
        asked_kinds(inv.incident.question)
    fits = next((k for k in EVIDENCE_ORDER if k in asked and (can(k) or (
        k == "failure" and can.crash_elsewhere()))), None)
    if fits:
        return KindChoice(kind=fits)
    if asked and inv.missing:
        # the collector says evidence it went for is missing: the asked question stays, and
        # its report names what could not be collected, rather than answering another one
        return KindChoice(kind=asked[0])
    by_evidence = next((k for k in EVIDENCE_ORDER if can(k)), None)
    if by_evidence is None:  # nothing to answer from: the asked kind says what is missing
        return KindChoice(kind=asked[0] if asked else "failure")
    if not asked:
        return KindChoice(kind=by_evidence)
    wanted = asked[0]
    return KindChoice(kind=by_evidence, note=(
        f"the question reads as {ASKED_AS[wanted]}, but the bundle has {_EVIDENCE[wanted]}: "
        f"answered as {ASKED_AS[by_evidence]}, from what the bundle holds"))


def infer_kind(inv: Inventory) -> str:
    return choose_kind(inv).kind
