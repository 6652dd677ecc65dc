"""Which parser reads which file: formats are identified by content, in a fixed order.

Adding a format means adding a parser module and listing it here; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path

from goodput_agent.parsing.base import ParseContext, Parser, ParseResult
from goodput_agent.parsing.failure_words import FACT as FAILURE_WORDS
from goodput_agent.parsing.failure_words import FREE_TEXT_FORMATS, unexplained_failure_lines

# Format groups that tools and the planner select by (one list, next to the parsers).
SLURM_FORMATS = frozenset({"sacct_pipe", "sacct_table", "sacct_json", "slurm_nodes_json",
                           "scontrol_job", "scontrol_node", "sinfo_reasons", "sinfo"})
KUBERNETES_FORMATS = frozenset({"k8s_list", "k8s_describe", "k8s_table"})
SCHEDULER_FORMATS = SLURM_FORMATS | KUBERNETES_FORMATS
JOB_LOG_FORMATS = frozenset({"job_log", "torchelastic_error", "flight_recorder", "tool_report"})
METRICS_FORMATS = frozenset({"openmetrics", "prom_api_json"})
# a serving engine's own log: its periodic stats answer the latency question without metrics
SERVING_LOG_FORMATS = frozenset({"vllm_log", "sglang_log", "bench_summary"})
FAILURE_FORMATS = SCHEDULER_FORMATS | JOB_LOG_FORMATS | {"kernel_log"}


@cache
def parsers() -> tuple[Parser, ...]:
    from goodput_agent.parsing import (
        engine_config,
        flight_recorder,
        job_log,
        job_script,
        k8s,
        kernel_log,
        openmetrics,
        sglang_log,
        slurm,
        tool_reports,
        torchelastic,
        vllm_log,
    )
    from goodput_agent.parsing.k8s import describe as k8s_describe
    from goodput_agent.parsing.k8s import manifest as k8s_manifest
    from goodput_agent.parsing.k8s import tables as k8s_tables
    from goodput_agent.parsing.kineto import parser as kineto

    # Structured formats first (they are unambiguous), free-text logs last.
    return (
        *slurm.PARSERS,
        k8s.PARSER,
        torchelastic.PARSER,
        flight_recorder.PARSER,
        kineto.PARSER,
        *openmetrics.PARSERS,
        vllm_log.PARSER,  # before engine_config: a server log quotes its command line
        sglang_log.PARSER,
        job_script.PARSER,  # before the logs: a script's echo lines are not output
        k8s_manifest.PARSER,
        engine_config.PARSER,  # before the logs: a command line is configuration, not output
        k8s_describe.PARSER,  # before the logs: describe's "State: Terminated" is not output
        k8s_tables.PARSER,  # before the logs: a table row that says OOMKilled is not output
        tool_reports.PARSER,  # RAS, py-spy, profiler table, DNS: before the logs
        tool_reports.BENCH_PARSER,
        kernel_log.PARSER,
        job_log.PARSER,
    )


def identify(head: str, name: str) -> Parser | None:
    for parser in parsers():
        try:
            if parser.sniff(head, name):
                return parser
        except Exception:  # a sniffer must never take the scan down  # noqa: BLE001
            continue
    return None


DEEP_WINDOW = 16 * 1024  # what a sniffer sees around a candidate line, as it sees a file's head
DEEP_TRIES = 256  # candidate windows per file (spread over the file, first ones first)


def identify_deep(path: Path) -> Parser | None:
    """The parser for a file whose head no sniffer knows, chosen by its content anywhere: each
    line that holds one of the log parsers' markers (found in one prefilter pass over the whole
    file) opens a window the sniffers judge as they judge a head. A long job log whose first
    pages are an argument dump or NCCL INFO lines is still a job log."""
    for window in _candidate_windows(path):
        if parser := identify(window, path.name):
            return parser
    return None


def _candidate_windows(path: Path) -> Iterator[str]:
    from goodput_agent.parsing.job_log.scan import MARKERS
    from goodput_agent.parsing.lines import CHUNK_BYTES, _open, strip_ansi
    from goodput_agent.parsing.prefilter import prefilter_for

    markers = prefilter_for(MARKERS + _SERVING_MARKERS)
    tried, last_end = 0, -1
    with _open(path) as fh:
        carry = b""
        while tried < DEEP_TRIES:
            block = fh.read(CHUNK_BYTES)
            buf = carry + block
            if not buf:
                return
            for start in markers.line_starts(buf):
                if start < last_end:  # inside the window just judged
                    continue
                window = buf[start:start + DEEP_WINDOW]
                if len(window) < DEEP_WINDOW and block:
                    break  # the window runs past this block: judge it with the next one
                last_end = start + DEEP_WINDOW
                tried += 1
                yield strip_ansi(window).decode("utf-8", errors="replace")
                if tried >= DEEP_TRIES:
                    return
            if not block:
                return
            keep = max(0, len(buf) - DEEP_WINDOW)
            carry, last_end = buf[keep:], last_end - keep


# the serving engines' stats lines (their parsers are not job logs)
_SERVING_MARKERS = (b"Avg prompt throughput:", b"Decode batch", b"Prefill batch",
                    b"Serving Benchmark Result")


# text formats a user pastes other output into: their files also get the job log's
# decisive-line scan, whose findings join where the format's own parser found nothing
LINE_SCANNED = frozenset({"k8s_table", "k8s_describe"})
_DECISIVE_KINDS = frozenset({"gpu_device_unhealthy", "host_oom_kill", "cgroup_oom", "cuda_oom",
                             "cuda_error", "xid", "signal", "segfault"})


# formats no failure tool reads (a serving engine's log, its command line or config, a
# benchmark's summary) that a user pastes a crash into as well: for a failure question their
# files get the job log's decisive-line scan too (decisive_lines)
DECISIVE_SCANNED = frozenset({"engine_config", "vllm_log", "sglang_log", "bench_summary"})


def decisive_lines(path: Path, ctx: ParseContext) -> ParseResult:
    """The job log's decisive lines in a file of another format (a CUDA OOM quoted after a
    server's command line), with the count of its lines that read as a failure and that none
    of them explains."""
    from goodput_agent.parsing import job_log

    parsed = job_log.PARSER.parse(path, ctx)
    events = [e for e in parsed.events
              if e.role.value == "primary" and e.kind.value in _DECISIVE_KINDS]
    result = ParseResult(format="job_log", events=events)
    result._failure_lines = parsed._failure_lines
    return with_failure_words("job_log", path, result)


def with_failure_words(fmt: str, path: Path, result: ParseResult) -> ParseResult:
    """A free-text file's result with the count of its lines that read as a failure and that
    none of its events came from (parsing/failure_words.py)."""
    if fmt not in FREE_TEXT_FORMATS:
        return result
    explained = _event_lines(result)
    lines = result._failure_lines  # found by the parser's own pass, else read now
    result.facts[FAILURE_WORDS] = lines.fact(explained) if lines is not None else \
        unexplained_failure_lines(path, explained)
    result._failure_lines = None  # settled: not carried back from a worker process
    return result


def _event_lines(result: ParseResult) -> set[int]:
    return {n for e in result.events
            for n in range(e.locator.line_start or 0, (e.locator.line_end or 0) + 1)}


def parse_file(parser: Parser, path: Path, ctx: ParseContext) -> ParseResult:
    """The parser's result; for LINE_SCANNED formats with the decisive lines it did not read
    (a nvidia-smi or NVML line pasted beside a kubectl table, a kernel line in a describe)."""
    result = parser.parse(path, ctx)
    if parser.format in LINE_SCANNED:
        from goodput_agent.parsing import job_log

        covered = _event_lines(result)
        extra = [e for e in job_log.PARSER.parse(path, ctx).events
                 if e.role.value == "primary" and e.kind.value in _DECISIVE_KINDS
                 and e.locator.line_start not in covered]
        if extra:
            result = result.model_copy(update={"events": result.events + extra})
    return with_failure_words(parser.format, path, result)
