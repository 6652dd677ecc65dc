"""The registry's job-log parser: which files are job logs, and reading one."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.head_words import holds
from goodput_agent.parsing.job_log.classify import ENGINE_OOM_TEXT
from goodput_agent.parsing.job_log.file_parser import FileParser
from goodput_agent.parsing.job_log.prefixes import rank_from_filename
from goodput_agent.parsing.job_log.scan import ScanState, scan_with_times
from goodput_agent.parsing.job_log.state import FORMAT
from goodput_agent.parsing.lines import sniff_lines

_SNIFF_POSITIVE = re.compile(
    r"(?m)^\s*(?:\d{1,6}: )?\[(?:rank|default)\d+\]:|Traceback \(most recent call last\)|"
    r"[\w.\-]+:\d+:\d+ \[\d+\] (?:\S+ )?NCCL (?:INFO|WARN)|NCCL WARN|ProcessGroupNCCL|"
    r"torch\.distributed|torchrun|ChildFailedError|^Root Cause(?: \(first observed failure\))?:|"
    r"srun: error|slurmstepd(?:-[\w.\-]+)?: error|"
    r"CUDA out of memory|Watchdog caught collective|NET/IB\s*:|"
    r"torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: |cuda runtime error \(\d+\)|"
    r"RESOURCE_EXHAUSTED: |Resource exhausted: |OOM when allocating tensor|"
    + ENGINE_OOM_TEXT.pattern + "|"
    r"Fatal Python error: |DataLoader worker \(pid|socketStartConnect|ncclSocketInit|"
    r"WARN (?:Socket creation failed|Failed to open libibverbs|Duplicate GPU)|"
    r"^\s*(?:\w+\.)*[A-Z]\w*(?:Error|Exception): \S|"
    r"(?:Memory cgroup out of memory|Out of memory): Kill|"
    # host-memory kills others announce, shared memory, the GPU lost as user space sees it
    r"is killed by signal|killed due to (?:the node running low on memory|memory pressure)|"
    r"exceeds the memory usage threshold|System memory low at node with IP|"
    r": line \d+: +\d+ Killed\s|"
    r"node was low on resource: memory|"
    r"(?i:\breason\W{1,4}OOMKilled\b|exceeded the (?:request(?:ed)? )?memory|"
    r"container init was OOM-killed|\bexit_?code\W{1,4}137\b|exceeded MEM usage hard limit)|"
    r"_job_complete: JobId=\d+ WTERMSIG|"
    r"insufficient shared memory|unable to write to file </torch_|"
    r"failed to extend /dev/shm/|posix_fallocate failed|"
    r"(?m:(?:^|\]|\s|\*\*)(?:Killed|已杀死)(?:\*\*)?\s*$)|exit code 137\b|return code = -9\b|"
    r"Unable to determine the device handle|(?m:^No devices were found\s*$)|GPU is lost|"
    r"controller: NVIDIA[^\n]*\(rev ff\)|CUDA_ERROR_[A-Z]|Check failed: |(?i:Cuda Error): ")
# what a healthy training run prints: Python warnings, progress (step/epoch with a loss, a tqdm
# bar), syslog lines in any locale ("jan. 29 20:50:17 host kernel:", "11月 15 14:15:47 host
# systemd[1]:"): a job log with nothing wrong is read, and judged, like one with something wrong
_SNIFF_HEALTHY = re.compile(
    r"^[^\n]{0,400}?\b[A-Z]\w*Warning: \S|"
    r"(?i:\b(?:epoch|step|iter(?:ation)?)\b[^\n]{0,80}?\bloss\b\s*[:=]?\s*-?\d)|"
    r"\d{1,3}%\|[^|\n]{0,120}\|\s*\d+/\d+ \[|"
    r"^(?:[A-Za-zéû]{3,5}\.?|\d{1,2}月)\s+\d{1,2}\s+\d\d:\d\d:\d\d\s+\S+\s+"
    r"[\w\-./]+(?:\[\d+\])?:\s", re.M)
_KERNELISH = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? \S+ kernel:|"
    r"\d{4}-\d{2}-\d{2}T\S+ \S+ kernel:|\[\s*\d+\.\d+\] |kern\s*:\s*\w+\s*: |"
    r"\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d [\d:]+ \d{4}\] |kernel: |.*\bNVRM: )")
_KERNELISH_START = re.compile(_KERNELISH.pattern.removesuffix(r"|.*\bNVRM: )") + ")")
_SACCT = re.compile(r"(?m)^\s*JobID\s+JobName|^JobID\|JobName|^-{6,} -{6,}|^\s*PARTITION\s+AVAIL|"
                    r"^JobId=\d+ ")
_SACCT_WORDS = ("JobID", "------ ------", "PARTITION", "JobId=")  # each _SACCT branch holds one
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
        lines = sniff_lines(head)
        if not lines:
            return False
        if any(holds(head, w) for w in _SACCT_WORDS) and _SACCT.search(head[:8192]):
            return False
        # `.*\bNVRM: ` scans the whole line: only lines that hold the word can match it
        kernelish = sum(1 for ln in lines if (_KERNELISH_START if "NVRM: " not in ln
                                               else _KERNELISH).match(ln))
        if kernelish * 2 >= len(lines):
            return False
        return bool(_SNIFF_POSITIVE.search(head) or _SNIFF_HEALTHY.search(head)) \
            or rank_from_filename(name) is not None

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        fp = FileParser(ctx)
        st = ScanState()
        try:
            for lineno, line, ts_line in scan_with_times(path, st):
                fp.feed(lineno, line, ts_line)
            fp.lines_read = st.lines
        except OSError as e:
            raise ParseError(f"cannot read {ctx.rel_path}: {e.strerror or e}") from e
        except (EOFError, zlib.error) as e:
            raise ParseError(f"{ctx.rel_path}: corrupt compressed file ({e})") from e
        result = fp.finish()
        result._failure_lines = st.words
        return result


PARSER = JobLogParser()
