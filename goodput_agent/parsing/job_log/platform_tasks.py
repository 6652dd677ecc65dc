"""A training platform's task list printed under its exit diagnostics (OpenPAI-style job
status: `Task role  Index State  Node  IP`, one row per task): which node each task ran on.

The platform's own memory verdict on its container (host_memory.shell_kill, detail "platform")
names no node; when exactly one task FAILED and the others were stopped after it, the verdict
is that task's, on its node.
"""

from __future__ import annotations

import re

from goodput_agent.core.events import Event
from goodput_agent.parsing.job_log.state import LineState, Stream

_HEADER = re.compile(r"^\s*Task ?role\s+(?:Task ?)?Index\s+(?:Task ?)?State\s+Node(?:\s+IP)?\s*$",
                     re.IGNORECASE)
_ROW = re.compile(r"^\s*(?P<role>[A-Za-z][\w-]*)\s+(?P<index>\d+)\s+(?P<state>[A-Z][A-Z_]+)\s+"
                  r"(?P<node>[A-Za-z0-9][\w.\-]*)(?:\s+(?P<ip>\d{1,3}(?:\.\d{1,3}){3}))?\s*$")
_FAILED = frozenset({"FAILED", "ERROR", "FAILURE"})


class PlatformTasks(LineState):
    """Reads the task list's header and rows into facts["platform_tasks"]."""

    def _m_platform_task(self, stream: Stream, c: str) -> bool:
        tasks = self.facts.get("platform_tasks")
        if tasks is None:
            if "ask" in c and _HEADER.match(c):
                self.facts["platform_tasks"] = []
                return True
            return False
        m = _ROW.match(c)
        if m is None:
            return False
        tasks.append({"role": m["role"], "index": int(m["index"]), "state": m["state"],
                      "node": m["node"], "ip": m["ip"], "line": self.lineno})
        return True

    def locate_platform_verdicts(self, events: list[Event]) -> None:
        """The platform's verdicts take the node of the one task that failed."""
        failed = [t for t in self.facts.get("platform_tasks") or [] if t["state"] in _FAILED]
        if len(failed) != 1:
            return
        task = failed[0]
        for e in events:
            if e.node is None and e.detail.get("platform"):
                e.node = task["node"]
                e.detail["task"] = f"{task['role']} {task['index']} (line {task['line']})"
