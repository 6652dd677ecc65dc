"""torchelastic: the agent's lines and its ChildFailedError summary."""

from __future__ import annotations

import re
from typing import Any

from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.job_log.classify import exit_code_detail, signal_name
from goodput_agent.parsing.job_log.prefixes import parse_time_text
from goodput_agent.parsing.job_log.state import (
    MESSAGE_CHARS,
    ElasticEntry,
    OpenTraceback,
    Stream,
    line_excerpt,
)
from goodput_agent.parsing.job_log.traceback_text import parse_exception_line
from goodput_agent.parsing.job_log.tracebacks import TracebackReader

# torchelastic's _FAILURE_FORMAT_TEMPLATE pads every key to 10 columns
# torch >= 1.11 pads the keys ("time      : ..."); 1.9-1.10 do not and carry the error file's
# JSON under "msg:" ("message": "ValueError: ...")
_ELASTIC_FIELD = re.compile(r"^\s+(?P<key>time|host|rank|exitcode|error_file|traceback|msg)"
                            r" *: ?(?P<val>.*)$")
_ELASTIC_MSG_JSON = re.compile(r'^\s*"message"\s*:\s*"(?P<text>.*?)",?\s*$')
_ELASTIC_FAILED = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) "
                             r"\(pid: (?P<pid>\d+)\) of binary:(?: (?P<bin>\S+))?")
_CLOSING = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>SIG[A-Z]+)")
_DEATH = re.compile(r"Received (?P<sig>\d+|SIG[A-Z]+) death signal, shutting down workers")
_GOT_SIGNAL = re.compile(r"Process (?P<pid>\d+) got signal: (?P<sig>\d+)")


class ElasticSummary(TracebackReader):
    """The summary's fields per failed rank, and the agent's exit and signal lines."""

    def _elastic_block(self, stream: Stream, content: str) -> bool:
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
            stream.entry = ElasticEntry(stream.section == "root", self.lineno, self.lineno,
                                        self.prefix, line_excerpt(self.line))
        entry = stream.entry
        entry.fields[key] = val
        entry.end = self.lineno
        if key == "traceback" and val.startswith("Traceback"):
            stream.tb = OpenTraceback(self.lineno, entry=entry)
        return True

    def _elastic_msg(self, stream: Stream, content: str) -> bool:
        """The exception inside a torch 1.9-1.10 summary's "msg:" JSON, as its traceback line."""
        entry = stream.entry
        if entry is None or "msg" not in entry.fields:
            return False
        entry.end = self.lineno
        m = _ELASTIC_MSG_JSON.match(content)
        if m and entry.exc is None and (exc := parse_exception_line(m["text"])):
            self._emit_traceback(OpenTraceback(self.lineno, entry=entry), exc[0], exc[1])
        return True

    def _flush_entry(self, stream: Stream) -> None:
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

    def _m_elastic_agent(self, stream: Stream, c: str) -> bool:
        if "exitcode" not in c and "signal" not in c:
            return False
        if m := _ELASTIC_FAILED.search(c):
            d = {**exit_code_detail(int(m["code"])), "local_rank": int(m["local"]),
                 "pid": int(m["pid"]), "binary": m["bin"]}
            sig = f" ({d['signal_name']})" if d.get("signal_name") else ""
            killed = d.get("signal_name") == "SIGKILL"  # from outside: the OOM killer, usually
            if killed:
                d.update(weight=0.5, kernel_record_missing=True)
            self.add(EventKind.exit_status, Role.primary if killed else Role.symptom,
                     "host_oom" if killed else None,
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
