"""`kubectl describe pod|node` text (format "k8s_describe"), whole or as pasted fragments.

What a user has at hand when a pod fails is often the describe output, not `-o json`. The same
facts are read from it, and judged by the same rules as the JSON objects (`k8s.py`): a
container's State / Last State (Reason, Exit Code, Started/Finished), the pod's Node, a node's
Conditions table, and the Events table. Event ages ("5m", "2m (x20 over 9m)") are relative to
when describe ran, so events carry no time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.head_words import holds
from goodput_agent.parsing.k8s.relayed import event_verdict
from goodput_agent.parsing.k8s.verdicts import GPU_SHORTFALL, Verdict, classify_termination
from goodput_agent.parsing.lines import read_whole_text

FORMAT = "k8s_describe"
_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Z][A-Za-z ]{1,30}):(?:\s+(?P<val>\S.*?))?\s*$")
_STATE = re.compile(r"^\s*(?:Last )?State:\s+(?:Waiting|Terminated|Running)\b", re.M)
_TOP_KEYS = ("Name", "Namespace", "Node", "Roles", "Taints", "Conditions", "Containers",
             "Events", "Status", "Controlled By", "Allocatable", "Capacity")
_TOP = re.compile(r"^(?:" + "|".join(_TOP_KEYS) + "):", re.M)
_CONTAINER_NAME = re.compile(r"^ {1,2}(?P<name>[a-z0-9][a-z0-9.-]{0,62}):\s*$")  # DNS-1123
_TABLE_SPLIT = re.compile(r"\s{2,}")
_EVENTS_HEADER = re.compile(r"^\s*Type\s+Reason\s+Age\s+From\s+Message\s*$")
_GPUS = re.compile(r"^\s+(?:nvidia\.com|amd\.com)/gpu:\s+(?P<n>\d+)\b")
_PRESSURE = {"MemoryPressure": "host_oom", "DiskPressure": "node_failure",
             "PIDPressure": "node_failure"}


def _when(text: str | None) -> datetime | None:
    """describe's times: RFC 1123 with a numeric zone ("Tue, 03 Jun 2025 11:10:02 +0000")."""
    try:
        ts = parsedate_to_datetime(text or "")
    except (TypeError, ValueError):
        return None
    return ts.astimezone(UTC) if ts.tzinfo else None


def _reporting_host(source: str) -> str | None:
    """The node of an Event's From column: kubectl before 1.20 prints the kubelet's host
    beside it (`kubelet, gpu-node-19`), as `-o json` keeps it in source.host."""
    component, _, host = source.partition(",")
    host = host.strip()
    return host if component.strip() == "kubelet" and re.fullmatch(r"[A-Za-z0-9][\w.\-]*",
                                                                    host) else None


@dataclass
class _Container:
    name: str
    fields: dict[str, tuple[str, int]] = field(default_factory=dict)  # "State.Reason" -> value


class _Reader:
    def __init__(self, lines: list[str], ctx: ParseContext):
        self.lines, self.ctx = lines, ctx
        self.events: list[Event] = []
        self.object = self.namespace = self.node = None
        self.is_node = False
        self.pending_line: int | None = None  # a pod's "Status: Pending"
        self.status_reason = ""  # a pod's top-level "Reason:" (Evicted), read with its Message
        self.gpus: dict[str, tuple[int, int]] = {}  # capacity/allocatable GPUs, their line

    def add(self, verdict: Verdict, summary: str, first: int, last: int, *,
            ts: datetime | None = None, detail: dict | None = None,
            node: str | None = None) -> None:
        excerpt = "\n".join(self.lines[first - 1:last])[:500]
        detail = {k: v for k, v in (detail or {}).items() if v not in (None, "")} | verdict.detail
        if verdict.weight:
            detail["weight"] = verdict.weight
        self.events.append(Event(
            kind=verdict.kind, role=verdict.role, category=verdict.category, ts=ts,
            clock=Clock.absolute if ts else Clock.none, node=node or self.node,
            summary=summary[:300],
            locator=Locator(path=self.ctx.rel_path, line_start=first, line_end=last),
            excerpt=excerpt, detail=detail))

    def read(self) -> None:
        container: _Container | None = None
        section, state = "", ""
        for n, line in enumerate(self.lines, 1):
            if _EVENTS_HEADER.match(line):
                section = "events"
                continue
            if section in ("events", "conditions") and self._table_row(section, line, n):
                continue
            if section in ("capacity", "allocatable") and (g := _GPUS.match(line)):
                self.gpus[section] = (int(g["n"]), n)
                continue
            if section == "containers" and (c := _CONTAINER_NAME.match(line)):
                self._end(container)
                container, state = _Container(c["name"]), ""
                continue
            m = _KEY.match(line)
            if not m:
                continue
            indent, key, val = len(m["indent"]), m["key"], (m["val"] or "").strip()
            if indent == 0:
                section, container = self._top(key, val, n, container)
            elif key in ("State", "Last State"):
                container = container or _Container("")
                state = key
                container.fields[key] = (val, n)
            elif container is not None and key in ("Reason", "Exit Code", "Signal", "Started",
                                                    "Finished", "Message") and state:
                container.fields[f"{state}.{key}"] = (val, n)
            elif container is not None and key == "Restart Count":
                container.fields[key] = (val, n)
        self._end(container)
        self._unhealthy_gpus()
        if self.pending_line and not self.is_node and self.node is None:
            self.add(Verdict(EventKind.job_state, Role.context),
                     f"pod {self.object} Pending: not scheduled to any node",
                     self.pending_line, self.pending_line,
                     detail={"pod": self.object, "state": "Pending", "never_started": True})

    def _top(self, key: str, val: str, n: int,
             container: _Container | None) -> tuple[str, _Container | None]:
        """A top-level key: it ends the container being read and may start a section."""
        self._end(container)
        if key == "Name" and self.object is None:
            self.object = val
        elif key == "Namespace":
            self.namespace = val
        elif key == "Node" and val and not val.startswith("<"):
            self.node = val.split("/")[0]
        elif key == "Roles":
            self.is_node, self.node = True, self.object
        elif key == "Status" and val == "Pending":
            self.pending_line = n
        elif key == "Reason":
            self.status_reason = val
        elif key == "Message" and (verdict := self._status_verdict(val)):  # the pod's status
            self.add(verdict, f"{self._what()}: {val}", n, n,
                     detail={"pod": None if self.is_node else self.object, "message": val})
        sections = {"Containers": "containers", "Init Containers": "containers",
                    "Conditions": "conditions", "Events": "events", "Capacity": "capacity",
                    "Allocatable": "allocatable"}
        return sections.get(key, ""), None

    def _status_verdict(self, message: str) -> Verdict | None:
        """A pod's status `Reason:` and `Message:`, judged as an Event with that reason and
        message is (the kubelet's eviction, a fault relayed from the runtime, a deadline or a
        preemption); only what names a class counts here."""
        verdict = event_verdict(self.status_reason, message, "Normal")
        return verdict if verdict is not None and verdict.category else None

    def _table_row(self, section: str, line: str, n: int) -> bool:
        cells = _TABLE_SPLIT.split(line.strip())
        if not cells[0]:
            return False
        if set(cells[0]) <= {"-"} or cells[0] == "Type":  # the header and its rule
            return True
        if len(cells) < 2:
            return False
        if section == "events":
            return self._event_row(cells, n)
        return self._condition_row(cells, n)

    def _event_row(self, cells: list[str], n: int) -> bool:
        if len(cells) < 4 or cells[0] not in ("Normal", "Warning"):
            return False
        event_type, reason = cells[0], cells[1]
        message = cells[4] if len(cells) > 4 else ""
        verdict = event_verdict(reason, message, event_type)
        if verdict is not None:
            self.add(verdict, f"{self._what()} {reason}: {message}".strip(), n, n,
                     detail={"reason": reason, "message": message, "type": event_type,
                             "age": cells[2], "source": cells[3], "object": self.object},
                     node=_reporting_host(cells[3]))
        return True

    def _condition_row(self, cells: list[str], n: int) -> bool:
        kind, status = cells[0], cells[1] if len(cells) > 1 else ""
        if not self.is_node or status not in ("True", "False", "Unknown"):
            return False
        times = [t for c in cells[2:] if (t := _when(c))]
        reason = next((c for c in cells[2:] if re.fullmatch(r"[A-Z][A-Za-z]+", c)), "")
        message = cells[-1] if len(cells) > 2 and not _when(cells[-1]) else ""
        if kind == "Ready" and status != "True":
            verdict = Verdict(EventKind.node_not_ready, Role.primary, "node_failure")
        elif kind in _PRESSURE and status == "True":
            verdict = Verdict(EventKind.node_not_ready, Role.primary, _PRESSURE[kind])
        else:
            return True
        self.add(verdict, f"node {self.node} {kind}={status}: {reason} {message}".strip(), n, n,
                 ts=times[-1] if times else None,
                 detail={"condition": kind, "status": status, "reason": reason,
                         "message": message})
        return True

    def _unhealthy_gpus(self) -> None:
        """Fewer allocatable GPUs than the node has: the device plugin marked some unhealthy
        (an Xid it watches, a GPU lost), as the JSON nodes path reads it."""
        if "capacity" not in self.gpus or "allocatable" not in self.gpus:
            return
        (cap, first), (alloc, last) = self.gpus["capacity"], self.gpus["allocatable"]
        if alloc >= cap:
            return
        node = self.node or self.object
        self.add(Verdict(EventKind.gpu_device_unhealthy, Role.primary, "gpu_hardware"),
                 f"node {node or '?'} offers {alloc} of its {cap} GPUs: the device plugin "
                 "marked the others unhealthy", first, last,
                 detail={"capacity": cap, "allocatable": alloc, **GPU_SHORTFALL})

    def _what(self) -> str:
        kind = "node" if self.is_node else "pod"
        return f"{kind} {self.object}" if self.object else f"a {kind}"

    def _end(self, c: _Container | None) -> None:
        if c is None:
            return
        for state in ("State", "Last State"):
            value, n = c.fields.get(state, ("", 0))
            if value != "Terminated":
                continue
            reason = c.fields.get(f"{state}.Reason", ("", n))[0]
            code_text = c.fields.get(f"{state}.Exit Code", ("", n))[0]
            code = int(code_text) if code_text.lstrip("-").isdigit() else None
            verdict = classify_termination(reason, code, None)
            last = max((ln for k, (_, ln) in c.fields.items() if k.startswith(state)), default=n)
            when = "last termination" if state == "Last State" else "terminated"
            who = f"container {c.name}" if c.name else "a container"
            self.add(verdict, f"{self._what()} {who} {when}: "
                     f"{reason or 'exit'} (exit code {code})"
                     + (f" on {self.node}" if self.node else ""), n, last,
                     ts=_when(c.fields.get(f"{state}.Finished", ("", 0))[0]),
                     detail={"pod": self.object, "namespace": self.namespace,
                             "container": c.name, "reason": reason, "exit_code": code,
                             "restart_count": c.fields.get("Restart Count", ("", 0))[0],
                             "state": state})


class K8sDescribeParser:
    format = FORMAT

    def sniff(self, head: str, name: str) -> bool:
        stripped = head.lstrip()
        if stripped.startswith(("{", "[")):
            return False
        if holds(head, "Reason") and any(_EVENTS_HEADER.match(ln)
                                         for ln in head.splitlines()[:400]):
            return True
        # the regexes only where the words they need are there: every file of a bundle is sniffed
        if holds(head, "Capacity:") and holds(head, "Allocatable:") and "/gpu:" in head:
            return True  # a node's resources pasted alone
        return bool(holds(head, "State:") and _STATE.search(head)) or (
            sum(holds(head, f"{key}:") for key in _TOP_KEYS) >= 3
            and len(set(_TOP.findall(head))) >= 3)

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        try:
            text = read_whole_text(path)
        except (OSError, EOFError) as exc:
            raise ParseError(f"{ctx.rel_path}: cannot read: {exc}") from exc
        reader = _Reader(text.splitlines(), ctx)
        reader.read()
        res = ParseResult(format=FORMAT, lines_read=len(reader.lines), events=reader.events)
        if reader.node and not reader.is_node:
            res.facts["k8s_pod_node"] = {str(reader.object): reader.node}
        return res


PARSER = K8sDescribeParser()
