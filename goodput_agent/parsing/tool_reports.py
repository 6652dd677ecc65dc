"""What diagnostic tools print, read as they print it: a serving benchmark's result block, the
torch profiler's `key_averages()` table, NCCL's RAS status report, `dcgmi diag`'s result table
(dcgmi_diag.py), a py-spy dump, and DNS lookups
(`nslookup`, `host`, `getent hosts`) that name the host behind a peer's IP.

- `bench_serving` (SGLang, vLLM): `============ Serving Benchmark Result ============` then
  `Key:   value` rows (successful requests, duration, mean/median/P99 TTFT, ITL, E2E latency):
  a latency summary with no window to compare against;
- `key_averages().table()`: a dashed rule, a header with `Name` and `Self CPU %`, rows of ops:
  a profile, not a failure;
- NCCL RAS (`ncclras`, NCCL >= 2.24): `Job summary`, `Communicators...`, then `Errors` and
  `Warnings` sections. A MISMATCH (`N ranks have launched up to operation X`, with the minority
  listed as `Rank r -- GPU g managed by process p on node H`) is a communicator whose ranks
  disagree on how far they got: a stalled collective. The listed ranks are the minority; they
  may be behind or ahead (then the unlisted majority is behind, and RAS does not name it).
  INCOMPLETE / missing ranks are processes RAS could not reach;
- py-spy dump: `Process P: CMD`, then `Thread N (idle|active[+gil]): "Name"` and its frames,
  innermost first: an active thread inside a collective (all_reduce, all_gather, barrier,
  broadcast, reduce_scatter, send/recv, wait) is a process waiting in that collective, the
  picture of a hang (which rank stopped first is not told); and for each process of the file,
  where its main thread is (its pid and innermost frames, idle or active), as context: what
  the dumps of several ranks say together is the analysis' to read (analysis/failure/
  stack_dumps.py);
- nccl-tests (`all_reduce_perf` and its siblings): the result rows (size, count, type, redop,
  root, then time / algbw / busbw / #wrong out of place and in place): facts `nccl_tests`
  (sizes measured, the largest, results its data check found wrong); a benchmark that ran
  is no failure of a job;
- DNS: `Name: host` / `Address: ip`, `ip.in-addr.arpa name = host.` (nslookup), `ip.in-addr.arpa
  domain name pointer host.` and `host has address ip` (`host`), `ip  name  aliases...` lines
  (`getent hosts`, /etc/hosts),
  facts `host_ips` (as Slurm's node records give them) map a peer's IP to its host.
"""

from __future__ import annotations

import re
from pathlib import Path

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.dcgmi_diag import HEADER as _DCGMI
from goodput_agent.parsing.dcgmi_diag import dcgmi_events
from goodput_agent.parsing.head_words import holds
from goodput_agent.parsing.lines import read_whole_text
from goodput_agent.parsing.profile_table import HEADER as PROFILE_HEADER
from goodput_agent.parsing.profile_table import profile_tables
from goodput_agent.parsing.pyspy_dump import parse_text_processes

_BENCH = re.compile(r"=+ Serving Benchmark Result =+")
_BENCH_ROW = re.compile(r"^(?P<key>[A-Za-z][\w ()/%.\-]+?):\s+(?P<val>[\d.]+|inf|not set)\s*$")
_RAS = re.compile(r"^Job summary\s*\n=+", re.M)
_RAS_MISMATCH = re.compile(r"(?P<n>\d+) ranks? ha(?:ve|s) launched up to operation (?P<op>\d+)")
_RAS_DEAD = re.compile(r"^\s*Process (?P<pid>\d+) on node (?P<node>\S+) managing GPU (?P<gpu>\d+)")
_RAS_PER_NODE = re.compile(r"^\(total\)\s+per node.*\n\s*(?P<nodes>\d+)\s+(?P<per>\d+)\s", re.M)
# a rank of the listed group, or a lone outlier with its own count (NCCL's ras/client_support.cc)
_RAS_RANK = re.compile(r"Rank (?P<rank>\d+) (?:has launched up to operation (?P<op>\d+) |"
                       r"(?P<none>has not launched any operations) )?-- GPU (?P<gpu>\d+) managed "
                       r"by process (?P<pid>\d+) on node (?P<node>\S+)")
_PYSPY_THREAD = re.compile(r'^Thread (?:0x[0-9A-Fa-f]+|\d+) \((?P<state>active|idle)'
                           r'(?:\+gil)?\)(?:: "(?P<name>[^"]*)")?', re.M)
_COLLECTIVE = re.compile(r"^\s+(?P<fn>all_reduce|all_gather\w*|reduce_scatter\w*|broadcast\w*|"
                         r"barrier|all_to_all\w*|send|recv|isend|irecv|wait|_wait|"
                         r"monitored_barrier) \((?P<file>[^)]*distributed[^)]*)\)")
_DNS = re.compile(r"^Name:\s+(?P<name>\S+)\s*\nAddress(?:es)?:\s+(?P<ip>[\d.]+)|"
                  r"^(?P<rev>[\d.]+)\.in-addr\.arpa\s+(?:name =|domain name pointer) "
                  r"(?P<rname>\S+?)\.?\s*$|"
                  r"^(?P<hname>\S+) has address (?P<hip>[\d.]+)", re.M)
# `getent hosts` and /etc/hosts: an address, its canonical name, then its aliases, then perhaps
# a comment. A real /etc/hosts holds IPv6 lines too (`::1 localhost ip6-localhost`, `ff02::1
# ip6-allnodes` in every Debian default): an IPv6 address has a `::` or all eight groups, which
# a clock (`12:34:56 ready`) has not
_IPV6 = r"[0-9A-Fa-f:]*::[0-9A-Fa-f:.]*|(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}"
_HOSTS_LINE = re.compile(rf"^(?P<ip>\d{{1,3}}(?:\.\d{{1,3}}){{3}}|{_IPV6})(?:%\w+)?[ \t]+"
                         r"(?P<name>[A-Za-z][\w.\-]*)(?:[ \t]+[A-Za-z][\w.\-]*)*[ \t]*"
                         r"(?:#.*)?$", re.M)


def _hosts_table(text: str) -> bool:
    """Every line but comments is an address and its names (getent hosts, /etc/hosts); read
    until the first line that is not."""
    seen = False
    for ln in text.splitlines():
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        if not _HOSTS_LINE.fullmatch(ln):
            return False
        seen = True
    return seen


# nccl-tests (all_reduce_perf and its siblings): a result row is size, count, type, redop, root,
# then time / algbw / busbw / #wrong out of place and in place
_NCCL_TESTS_ROW = re.compile(
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?:float|half|bfloat16|double|int8|uint8|int32|"
    r"uint32|int64|uint64|fp8_e4m3|fp8_e5m2)\s+(?:sum|prod|max|min|avg|none)\s+-?\d+"
    r"(?:\s+(?:[\d.]+|N/A)){3}\s+(?P<wrong>\d+|N/A)(?:\s+(?:[\d.]+|N/A)){3}\s+(?P<wrong2>\d+|N/A)"
    r"\s*$", re.M)


# nccl-tests' data types: a row holds one (its columns may be spaces or tabs), a text without
# any has none
_NCCL_TESTS_TYPES = ("float", "half", "bfloat16", "double", "int8", "int32", "int64", "fp8_e")
_DNS_WORDS = ("Address", "in-addr.arpa", " has address ")


def _kind(text: str) -> str | None:
    """Which report `text` is; each pattern is tried only where its fixed words are present
    (head_words: one pass finds them all, where a multi-line pattern tries every position of
    a 64 KiB head)."""
    if holds(text, "Benchmark Result") and _BENCH.search(text):
        return "bench"
    if any(holds(text, t) for t in _NCCL_TESTS_TYPES) and \
            len(_NCCL_TESTS_ROW.findall(text[:64 * 1024])) >= 3:
        return "nccl_tests"
    if holds(text, "Self CPU %") and PROFILE_HEADER.search(text):
        return "profile"
    if holds(text, "Job summary") and _RAS.search(text):
        return "ras"
    if holds(text, "Diagnostic") and _DCGMI.search(text):
        return "dcgmi"
    if holds(text, "Thread ") and _PYSPY_THREAD.search(text):
        return "pyspy"
    if len(text) < 64 * 1024 and ((any(holds(text, w) for w in _DNS_WORDS)
                                   and _DNS.search(text)) or _hosts_table(text)):
        return "dns"
    return None


def _nccl_tests_facts(text: str) -> dict[str, int]:
    """A collective benchmark's run: how many sizes it measured and how many results it found
    wrong (its data check); a benchmark that ran is no failure of a job."""
    rows = list(_NCCL_TESTS_ROW.finditer(text))
    wrong = sum(int(w) for m in rows for w in (m["wrong"], m["wrong2"]) if w.isdigit())
    return {"sizes": len(rows), "max_bytes": max(int(m["size"]) for m in rows),
            "wrong": wrong}


def _dns_pairs(text: str) -> list[tuple[str, str]]:
    pairs = []
    for m in _DNS.finditer(text):
        if m["ip"]:
            pairs.append((m["ip"], m["name"]))
        elif m["rev"]:  # 4.0.0.10.in-addr.arpa: the address reversed
            pairs.append((".".join(reversed(m["rev"].split("."))), m["rname"]))
        else:
            pairs.append((m["hip"], m["hname"]))
    if _hosts_table(text):
        pairs += [(m["ip"], m["name"]) for m in _HOSTS_LINE.finditer(text)]
    return pairs


class ToolReportParser:
    """`format` "tool_report" (RAS, py-spy, profiler table, DNS: the failure question reads
    them) or "bench_summary" (a serving benchmark's result: the latency question's)."""

    def __init__(self, fmt: str, kinds: frozenset[str]) -> None:
        self.format, self.kinds = fmt, kinds

    def sniff(self, head: str, name: str) -> bool:
        return _kind(head) in self.kinds

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        try:
            text = read_whole_text(path)
        except (OSError, EOFError) as exc:
            raise ParseError(f"{ctx.rel_path}: cannot read: {exc}") from exc
        kind = _kind(text) or "unknown"
        lines = text.splitlines()
        res = ParseResult(format=self.format, lines_read=len(lines), facts={"report": kind})
        if kind == "bench":
            rows = [(n, m) for n, ln in enumerate(lines, 1) if (m := _BENCH_ROW.match(ln))]
            res.facts["benchmark"] = {m["key"].strip(): m["val"] for _, m in rows}
            res.facts["benchmark_lines"] = {m["key"].strip(): n for n, m in rows}
            res.facts["benchmark_results"] = len(_BENCH.findall(text))
        elif kind == "nccl_tests":
            res.facts["nccl_tests"] = _nccl_tests_facts(text)
        elif kind == "profile":
            res.facts["profile_tables"] = [t.model_dump() for t in profile_tables(lines)]
        elif kind == "ras":
            res.events.extend(_ras_events(lines, ctx))
            res.events.extend(_ras_dead_nodes(text, lines, ctx))
        elif kind == "dcgmi":
            res.events.extend(dcgmi_events(lines, ctx))
        elif kind == "pyspy":
            res.events.extend(_pyspy_events(text, ctx))
        elif kind == "dns":  # the shape slurm's node records use: host -> its addresses
            hosts: dict[str, list[str]] = {}
            for ip, host in _dns_pairs(text):
                hosts.setdefault(host.rstrip("."), []).append(ip)
            res.facts["host_ips"] = hosts
        return res


def _event(ctx: ParseContext, n: int, line: str, kind: EventKind, role: Role, summary: str,
           detail: dict, rank: int | None = None, node: str | None = None,
           category: str | None = None) -> Event:
    return Event(kind=kind, role=role, category=category, ts=None, clock=Clock.none, rank=rank,
                 node=node, summary=summary, excerpt=line.strip()[:500], detail=detail,
                 locator=Locator(path=ctx.rel_path, line_start=n, line_end=n))


def _ras_events(lines: list[str], ctx: ParseContext) -> list[Event]:
    """A MISMATCH block: the ranks RAS names, with the operation counts of both groups."""
    out: list[Event] = []
    counts: list[tuple[int, int]] = []  # (ranks, operation)
    for n, line in enumerate(lines, 1):
        if m := _RAS_MISMATCH.search(line):
            counts.append((int(m["n"]), int(m["op"])))
        elif (m := _RAS_RANK.search(line)) and (len(counts) >= 2 or m["op"] or m["none"]):
            # RAS lists the smaller group's ranks; a lone outlier rank carries its own count
            alone = (1, int(m["op"] or 0)) if m["op"] or m["none"] else None
            minority = alone or min(counts)
            majority = max(counts)
            out.append(_event(
                ctx, n, line, EventKind.collective_progress, Role.symptom,
                f"NCCL RAS: rank {m['rank']} launched up to operation {minority[1]}, "
                f"{majority[0]} other ranks up to {majority[1]}",
                {"ras_mismatch": True, "operation": minority[1], "others_at": majority[1],
                 "others": majority[0], "pid": int(m["pid"]), "gpu_index": int(m["gpu"])},
                rank=int(m["rank"]), node=m["node"]))
    return out


def _ras_dead_nodes(text: str, lines: list[str], ctx: ParseContext) -> list[Event]:
    """RAS's DEAD list (`N job processes are considered dead (unreachable via the RAS
    network)`, then `Process P on node N managing GPU G`): one dead process is that process's
    crash (NCCL's RAS guide); every process of a node dead, with the job summary's count per
    node, is the node gone from the job: down, or cut off (RAS talks over the bootstrap
    network), hence below an unambiguous record's weight."""
    per = _RAS_PER_NODE.search(text)
    if per is None or int(per["nodes"]) < 2:
        return []
    dead: dict[str, list[tuple[int, str]]] = {}
    in_dead = False
    for n, line in enumerate(lines, 1):
        if line.strip() == "DEAD":
            in_dead = True
        elif in_dead and (m := _RAS_DEAD.match(line)):
            dead.setdefault(m["node"], []).append((n, line))
        elif in_dead and line.strip() and "considered dead" not in line:
            in_dead = False
    return [_event(ctx, found[0][0], found[0][1], EventKind.node_not_ready, Role.primary,
                   f"NCCL RAS: all {len(found)} job processes on node {node} are dead "
                   "(unreachable via the RAS network): the node left the job",
                   {"ras_dead": len(found), "weight": 0.7}, node=node,
                   category="node_failure")
            for node, found in dead.items() if len(found) >= int(per["per"])]


def _pyspy_events(text: str, ctx: ParseContext) -> list[Event]:
    """An active thread whose innermost frames are a collective: the process waits in it."""
    out: list[Event] = []
    for t in _PYSPY_THREAD.finditer(text):
        if t["state"] != "active":
            continue
        block = text[t.end():].split("\nThread ", 1)[0]
        if m := _COLLECTIVE.search(block):
            n = text.count("\n", 0, t.start()) + 1
            out.append(_event(ctx, n, t[0], EventKind.collective_progress, Role.symptom,
                              f"py-spy: a thread is waiting in {m['fn']} ({m['file']})",
                              {"stuck_in_collective": m["fn"], "pyspy": True}))
    return out + _pyspy_processes(text, ctx)


KEPT_FRAMES = 8  # innermost frames kept per process: enough to tell where it waits


def _pyspy_processes(text: str, ctx: ParseContext) -> list[Event]:
    """One context event per dumped process: its pid and its main thread's innermost frames,
    located at the innermost frame's line (the thread's line when it shows no frame)."""
    out: list[Event] = []
    lines = text.splitlines()
    for dump in parse_text_processes(text):
        main = dump.main()
        if main is None:
            continue
        top = main.frames[0] if main.frames else None
        n = (top.at if top else main.at) or 1
        state = "active" if main.active else "idle"
        who = f"process {dump.pid}" if dump.pid is not None else "a process"
        out.append(_event(
            ctx, n, lines[n - 1], EventKind.other, Role.context,
            f"py-spy: {who}'s thread {main.name or '?'} ({state}) is in "
            f"{top.label() if top else 'no Python frame'}",
            {"stack_dump": True, "pid": dump.pid, "thread": main.name, "active": main.active,
             "frames": [[f.name, f.file, f.line] for f in main.frames[:KEPT_FRAMES]]}))
    return out


PARSER = ToolReportParser("tool_report", frozenset({"profile", "ras", "dcgmi", "pyspy",
                                                         "dns", "nccl_tests"}))
BENCH_PARSER = ToolReportParser("bench_summary", frozenset({"bench"}))
