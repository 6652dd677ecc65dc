"""`kubectl get pods|events|nodes` as text tables (format "k8s_table"), whole or pasted.

What a user pastes is often the plain table, not `-o json`: with or without its header, with
or without the namespace column (`-A`), with `-o wide`'s extra columns, `pod/` prefixes, or an
indent. Rows are read by shape:
- pods: NAME READY(n/m) STATUS RESTARTS AGE [IP NODE ...]: with `-o wide` each pod's node is
  a fact (as `-o json`'s pods are), so events about the pod name its node; a status of
  OOMKilled is the container's memory cgroup killing it (host memory),
  UnexpectedAdmissionError / Error / CrashLoopBackOff are told but decide nothing alone;
  Evicted rows need their message (events or describe);
- events: LAST SEEN TYPE REASON OBJECT MESSAGE: judged as `kubectl get events -o json` is
  (k8s/verdicts.py, k8s/relayed.py), an eviction because the node was low on memory included;
  the scheduler's `Successfully assigned NS/POD to NODE` binds the pod to its node (a fact);
- nodes: NAME STATUS ROLES AGE VERSION: a NotReady node is a node fault only with the job on
  it, which the table does not say (kept as context, named in the facts).
Ages are relative to when kubectl ran: rows carry no time.
"""

from __future__ import annotations

import re
from pathlib import Path

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.k8s.relayed import event_verdict, relayed_verdict
from goodput_agent.parsing.k8s.verdicts import Verdict
from goodput_agent.parsing.lines import read_whole_text

FORMAT = "k8s_table"
_AGE = r"(?:<unknown>|\d+[smhdy](?:\d+[smh])?|\d+\.\d+[smh])"
_POD = re.compile(r"^\s*(?:(?P<ns>[a-z0-9][a-z0-9-]*)\s+)?(?:pod/)?(?P<name>[a-z0-9][\w.\-<>]*"
                  r"(?:\.\.\.)?)\s+(?P<ready>\d+/\d+)\s+(?P<status>[A-Za-z][\w:]*)\s+"
                  r"(?P<restarts>\d+(?: \([^)]*\))?)\s+(?P<age>" + _AGE + r")\b"
                  # -o wide: the pod's IP and the node it is bound to
                  r"(?:\s+(?P<ip>[\d.]+|[\da-f:]+|<none>)\s+(?P<node>[a-z0-9][\w.\-]*|<none>)\b)?")
_EVENT = re.compile(r"^\s*(?:(?P<ns>[a-z0-9][a-z0-9-]*)\s+)?(?P<age>" + _AGE + r"(?: \(x\d+ "
                    r"over \S+\))?)\s+(?P<type>Normal|Warning)\s+(?P<reason>[A-Z]\w+)\s+"
                    r"(?P<object>[\w.\-]+/[\w.\-<> ]+?)\s{2,}(?P<message>\S.*)$")
_NODE = re.compile(r"^\s*(?P<name>[a-z0-9][\w.\-]*)\s+(?P<status>(?:Not)?Ready(?:,\S+)?)\s+"
                   r"(?:(?P<roles>\S+)\s+)?(?P<age>" + _AGE + r")(?:\s+(?P<version>v[\d.]+\S*))?")
_ASSIGNED = re.compile(r"Successfully assigned (?:(?P<ns>[a-z0-9][a-z0-9-]*)/)?"
                       r"(?P<pod>[a-z0-9][\w.\-]*) to (?P<node>[A-Za-z0-9][\w.\-]*)")
_STATUS_MESSAGE = re.compile(r"^\s*Message:\s+(?P<message>\S.*)$")
_HEADERS = re.compile(r"^\s*(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE|"
                      r"^\s*(?:NAMESPACE\s+)?LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE|"
                      r"^\s*NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION", re.M)
_POD_STATUS = {
    "OOMKilled": Verdict(EventKind.cgroup_oom, Role.primary, "host_oom"),
    "NodeLost": Verdict(EventKind.node_not_ready, Role.primary, "node_failure"),
    "DeadlineExceeded": Verdict(EventKind.time_limit, Role.primary, "time_limit"),
    "Error": Verdict(EventKind.exit_status, Role.symptom),
    "CrashLoopBackOff": Verdict(EventKind.exit_status, Role.symptom),
    "UnexpectedAdmissionError": Verdict(EventKind.other, Role.context),
    "Evicted": Verdict(EventKind.other, Role.context),
}


class _Rows:
    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.events: list[Event] = []
        self.facts: dict[str, list] = {"table_pods": [], "pods": [], "not_ready_nodes": []}

    def add(self, v: Verdict, summary: str, n: int, line: str, node: str | None = None,
            **detail: object) -> None:
        d = {k: val for k, val in detail.items() if val not in (None, "")} | v.detail
        if v.weight:
            d["weight"] = v.weight
        self.events.append(Event(
            kind=v.kind, role=v.role, category=v.category, ts=None, clock=Clock.none, node=node,
            summary=summary[:300], locator=Locator(path=self.ctx.rel_path, line_start=n,
                                                   line_end=n),
            excerpt=line.strip()[:500], detail=d))

    def row(self, n: int, line: str) -> None:
        if m := _EVENT.match(line):
            self._scheduled(m["reason"], m["message"])
            v = event_verdict(m["reason"], m["message"], m["type"])
            if v is not None:
                obj = m["object"].strip()
                self.add(v, f"{obj} {m['reason']}: {m['message']}", n, line,
                         reason=m["reason"], message=m["message"], type=m["type"],
                         object=obj.split("/", 1)[-1], object_kind=_kind(obj), age=m["age"])
        elif m := _POD.match(line):
            node = m["node"] if m["node"] and m["node"] != "<none>" else None
            self.facts["table_pods"].append({"name": m["name"], "namespace": m["ns"],
                                             "status": m["status"]})
            if node:  # as `-o json` pods are: the job's pods and the nodes they are bound to
                ip = m["ip"] if m["ip"] and m["ip"] != "<none>" else None
                self.facts["pods"].append({"name": m["name"], "namespace": m["ns"],
                                           "node": node, "phase": m["status"], "pod_ip": ip})
            if v := _POD_STATUS.get(m["status"]):
                self.add(v, f"pod {m['name']} {m['status']} (restarts {m['restarts']})", n,
                         line, node=node, pod=m["name"], namespace=m["ns"], reason=m["status"],
                         restarts=m["restarts"])
        elif (m := _STATUS_MESSAGE.match(line)) and (v := relayed_verdict(m["message"])):
            # a pod's status message pasted beside the table (describe's `Message:` line)
            self.add(v, f"pod status message: {m['message']}", n, line, message=m["message"])
        elif (m := _NODE.match(line)) and m["status"].startswith("NotReady"):
            self.facts["not_ready_nodes"].append(m["name"])
            self.add(Verdict(EventKind.node_not_ready, Role.context),
                     f"node {m['name']} NotReady (age {m['age']})", n, line, node=m["name"],
                     status=m["status"])


    def _scheduled(self, reason: str, message: str) -> None:
        """The scheduler's `Successfully assigned NS/POD to NODE`: where the pod is bound, as
        `get pods -o wide`'s NODE column says it."""
        if reason == "Scheduled" and (m := _ASSIGNED.search(message)):
            self.facts["pods"].append({"name": m["pod"], "namespace": m["ns"],
                                       "node": m["node"]})


def _kind(obj: str) -> str:
    kind = obj.split("/", 1)[0].lower()
    return {"pod": "Pod", "node": "Node", "job": "Job"}.get(kind, kind)


def _row_like(line: str) -> bool:
    """A table row of one of the three shapes (an event's row holds its type, a node's its
    readiness: looked for before the pattern is tried)."""
    return bool((("Normal" in line or "Warning" in line) and _EVENT.match(line))
                or _POD.match(line)
                or ("Ready" in line and (m := _NODE.match(line)) and m["version"]))


def _mostly_rows(lines: list[str]) -> bool:
    """At least two rows, and rows are at least half of the lines: read until more than half
    are not (a rank's log is settled after half its head, not all of it)."""
    allowed = len(lines) // 2  # rows * 2 >= n  <=>  misses <= n // 2
    rows = misses = 0
    for ln in lines:
        if _row_like(ln):
            rows += 1
        else:
            misses += 1
            if misses > allowed:
                return False
    return rows >= 2


class K8sTableParser:
    format = FORMAT

    def sniff(self, head: str, name: str) -> bool:
        if head.lstrip().startswith(("{", "[")):
            return False
        # each header holds NAME or LAST SEEN: a literal find spares the pattern, which tries
        # every position of the head (~0.4 ms a 64 KiB head)
        if ("NAME" in head or "LAST SEEN" in head) and _HEADERS.search(head):
            return True
        return _mostly_rows([ln for ln in head.splitlines()[:200] if ln.strip()])

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        try:
            text = read_whole_text(path)
        except (OSError, EOFError) as exc:
            raise ParseError(f"{ctx.rel_path}: cannot read: {exc}") from exc
        rows = _Rows(ctx)
        lines = text.splitlines()
        for n, line in enumerate(lines, 1):
            rows.row(n, line)
        facts = {k: v for k, v in rows.facts.items() if v}
        return ParseResult(format=FORMAT, events=rows.events, lines_read=len(lines),
                           facts=facts)


PARSER = K8sTableParser()
