"""NCCL lines: watchdog timeouts and progress, NCCL_DEBUG lines (hosts, communicators),
InfiniBand and socket errors, connection losses, NCCL error codes.
"""

from __future__ import annotations

import re
from typing import Any

import goodput_agent.parsing.job_log.nccl_vocab as nccl_vocab
from goodput_agent.core.events import EventKind, Role
from goodput_agent.parsing.job_log.classify import classify_cuda_error
from goodput_agent.parsing.job_log.device_errors import DeviceErrors
from goodput_agent.parsing.job_log.host_memory import host_memory_message
from goodput_agent.parsing.job_log.state import Stream

_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout")
_CHECK_TIMEOUT = re.compile(r"Exception raised from checkTimeout at \S*ProcessGroupNCCL|"
                            r"ProcessGroupNCCL::WorkNCCL::checkTimeout\(")
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
    # NCCL before 2.12 names no peer ("Got completion with error 12, opcode 0, ...")
    r"NET/IB\w*(?:/\w+)?\s*:\s*Got completion"
    r"(?: from peer\s*(?P<peer>[^\s<]*)(?:<(?P<port>\d+)>)?)?"
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
_IBV_STATUS = ("SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
               "WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
               "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR",
               "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
               "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR")


class NcclLines(DeviceErrors):
    """The collective library's own lines and its watchdog's."""

    def _watchdog_continuation(self, stream: Stream, content: str) -> None:
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

    def _m_watchdog(self, stream: Stream, c: str) -> bool:
        if "atchdog" not in c and "eartbeat" not in c and "process down" not in c \
                and "NCCL operations have failed" not in c and "checkTimeout" not in c:
            return False
        pg = _pg_detail(c)
        if _CHECK_TIMEOUT.search(c):
            return self._watchdog_frames(stream, pg)
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


    def _watchdog_frames(self, stream: Stream, pg: dict[str, Any]) -> bool:
        """The watchdog's timeout exception told by its C++ frames alone (`Exception raised
        from checkTimeout`, `ProcessGroupNCCL::WorkNCCL::checkTimeout`): a collective timed
        out in this process; nothing more when the file already printed a timeout (the frames
        follow the timeout's own message, often without its rank prefix)."""
        if stream.watchdog is not None or self.watchdog_seen:
            return True
        self.watchdog_seen.add((self.prefix.key, pg.get("pg_rank"), None, None))
        stream.watchdog = self.add(
            EventKind.nccl_watchdog_timeout, Role.symptom, "hang",
            "NCCL watchdog timeout, told by the watchdog's checkTimeout frames (the timeout's "
            "own message is not in the log)", {**pg, "frames_only": True},
            msg_rank=_msg_rank(pg))
        return True
    def _m_progress(self, stream: Stream, c: str) -> bool:
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

    def _m_nccl_line(self, stream: Stream, c: str) -> bool:
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
        if "/dev/shm" in msg and (shm := host_memory_message(msg)):  # shared memory ran out
            self.add(shm.kind, Role.primary, "host_oom", shm.summary, {**base, **shm.detail},
                     **kw)
        return True

    def _socket(self, text: str, base: dict[str, Any], kw: dict[str, Any]) -> bool:
        if sock := nccl_vocab.SOCKET_UNREACHABLE.search(text):
            # the socket transport could not reach its peer at all: the path is down, not
            # the peer process gone (that is a reset / closed by peer)
            self.add(EventKind.nccl_error, Role.primary, "network_fault",
                     f"NCCL socket to {sock['peer'] or 'its peer'} failed: "
                     f"{sock['why'].strip()}",
                     {**base, "peer": sock["peer"], "reason": sock["why"].strip(),
                      "weight": 0.6}, **kw)
            return True
        if refused := nccl_vocab.PEER_REFUSED.search(text):
            # a fault of the peer (its process, or its host), located by the peer's address
            self.add(EventKind.nccl_error, Role.primary, "network_fault",
                     f"NCCL could not connect to {refused['peer'] or 'its peer'}: connection "
                     "refused (nothing listens there: the peer's process or host)",
                     {**base, "peer": refused["peer"], "reason": "Connection refused",
                      "peer_refused": True, "weight": 0.45}, **kw)
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

    def _m_socket(self, stream: Stream, c: str) -> bool:
        if "ocket" not in c:
            return False
        return self._socket(c, {}, {})

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

    def _m_ib(self, stream: Stream, c: str) -> bool:
        if "NET/IB" not in c and "IBV_WC_" not in c:
            return False
        return self._ib(c, {}, {})

    def _conn(self, text: str, base: dict[str, Any], kw: dict[str, Any]) -> None:
        reason = _CONN.search(text)
        assert reason is not None
        d = {**base, "reason": reason[0]}
        if peer := re.search(r"(?:from|to) (\S+?<\d+>|\d+\.\d+\.\d+\.\d+\S*)", text):
            d["peer"] = peer[1]
        self.add(EventKind.connection_reset, Role.symptom, "network_fault",
                 f"Connection lost: {reason[0]}", d, **kw)

    def _m_conn(self, stream: Stream, c: str) -> bool:
        if not any(k in c for k in _CONN_KEYS) or not _CONN.search(c):
            return False
        self._conn(c, {}, {})
        return True

    def _m_nccl_code(self, stream: Stream, c: str) -> bool:
        if "nccl" not in c and "NCCL" not in c:
            return False
        for code, rx, role, category in _NCCL_CODES:
            if rx.search(c):
                self.add(EventKind.nccl_error, role, category, f"NCCL error: {code}",
                         {"nccl_code": code})
                return True
        return False


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
