"""CUDA OOM and errors, forwarded kernel lines, crashes and kills."""

from __future__ import annotations

import re
from typing import Any

from goodput_agent.events import EventKind, Role
from goodput_agent.parsing import kernel_log
from goodput_agent.parsing.job_log.classify import (
    HANDLED,
    OOM_TEXT,
    classify_cuda_error,
    oom_detail,
    oom_summary,
)
from goodput_agent.parsing.job_log.state import LineState, Stream
from goodput_agent.parsing.timefmt import ClockPolicy

_SEGV = re.compile(r"Segmentation fault|Fatal Python error: (?P<fatal>Segmentation fault|Bus error|"
                   r"Floating point exception|Aborted)|\bBus error\b|\*\*\* SIGSEGV")
_ABORTED = re.compile(r"\bAborted \(core dumped\)")
_CRASH_KEYS = ("Segmentation", "Fatal Python", "Bus error", "SIGSEGV", "core dumped", "Killed")
_KILLED = re.compile(r"^\s*Killed\s*$|: \d+ Killed\s")


class DeviceErrors(LineState):
    """Lines about the GPU and the process itself."""

    def _m_kernel(self, stream: Stream, c: str) -> bool:
        """A kernel line (OOM kill, Xid) forwarded into the job's output or pasted there."""
        if "NVRM: " not in c and "process" not in c and "oom-kill" not in c:
            return False
        f = kernel_log.classify(kernel_log.split_prefix(c, ClockPolicy()).msg)
        if f is None or f.role == Role.context:
            return False
        self.add(f.kind, f.role, f.category, f.summary, {**f.detail, "forwarded_kernel": True})
        return True

    def _m_oom(self, stream: Stream, c: str) -> bool:
        if "emory" not in c and "OutOfMemory" not in c:
            return False
        if not OOM_TEXT.search(c):
            return False
        d = oom_detail(c)
        if HANDLED.search(c):  # a warning about an OOM the program caught and recovered from
            self.add(EventKind.cuda_oom, Role.context, None, oom_summary(d) + " (handled)", d)
            return True
        self.add(EventKind.cuda_oom, Role.primary, "gpu_oom", oom_summary(d), d)
        return True

    def _m_cuda(self, stream: Stream, c: str) -> bool:
        if "CUDA" not in c and "Cuda" not in c and "cuda" not in c:
            return False
        cuda = classify_cuda_error(c)
        if not cuda:
            return False
        self._cuda(cuda, {}, {})
        return True

    def _cuda(self, cuda: tuple[str, str, str], base: dict[str, Any],
              kw: dict[str, Any]) -> None:
        what, category, confidence = cuda
        if OOM_TEXT.search(what) or what == "out of memory":
            self.add(EventKind.cuda_oom, Role.primary, "gpu_oom", "CUDA out of memory",
                     {**base, "cuda_error": what}, **kw)
            return
        self.add(EventKind.cuda_error, Role.primary, category, f"CUDA error: {what}",
                 {**base, "cuda_error": what, "confidence": confidence}, **kw)

    def _m_crash(self, stream: Stream, c: str) -> bool:
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
