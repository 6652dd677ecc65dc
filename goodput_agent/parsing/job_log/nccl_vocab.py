"""NCCL's own wording for network and configuration faults, as its source prints it.

- IB async events: NCCL's async thread prints every `ibv_event_type_str()` it receives ("Got
  async event : port error", newer "mlx5_1:1 async fatal event on QP (0x...): invalid request
  local work queue error"). Only the error events are faults; "client reregistration", "GID
  table change", "port active", "LID change", "SM change", "P_key change", "last WQE reached",
  "SRQ limit reached", "communication established", "send queue drained" and "path migrated"
  are the fabric doing its work.
- Socket transport and bootstrap: "socketStartConnect: Connect to <peer> failed : Software
  caused connection abort" (the peer could not be reached), "Socket creation failed : Address
  family not supported by protocol" and "Bootstrap : no socket interface found" (no usable IP
  interface: a configuration fault), "ncclSocketInit: connecting to address  with family N is
  neither AF_INET(2) nor AF_INET6(10)" (NCCL_SOCKET_IFNAME names no interface). NCCL turns them
  into `ncclSystemError` / `ncclInternalError` ("unhandled system error"), whose text alone says
  nothing of the cause. "Failed to open libibverbs.so" only means NCCL falls back to sockets.
- "Duplicate GPU detected : rank A and rank B both on CUDA device X" is how ncclCommInitRank
  reports `ncclInvalidUsage` (two ranks on one GPU: the launch configuration).
"""

from __future__ import annotations

import re

_BENIGN_ASYNC = ("client reregistration", "gid table change", "port active", "lid change",
                 "sm change", "p_key change", "pkey change", "last wqe reached",
                 "srq limit reached", "communication established", "send queue drained",
                 "path migrated", "device speed change")
ASYNC_EVENT = re.compile(r"(?:Got async event|async fatal event on \w+(?: \(0x[0-9a-fA-F]+\))?)"
                         r"\s*:\s*(?P<event>[^,\n]+)")

# NCCL >= 2.7 names the peer ("Connect to 10.0.0.4<56849> failed : ..."); NCCL 2.x before it
# did not ("include/socket.h:361 NCCL WARN Call to connect timeout : Connection refused")
_CONNECT = (r"(?:(?:Call to (?:recv|send|connect) (?:from|to)|socketStartConnect: Connect to|"
            r"socketPollConnect: Connect to|Connect to) (?P<peer>[0-9a-fA-F.:%\w]+?)(?:<\d+>)? "
            r"(?:failed ?: ?|returned \d+\()|Call to connect (?:failed|timeout) ?: ?)")
SOCKET_UNREACHABLE = re.compile(
    _CONNECT + r"(?P<why>Connection timed out|No route to host|Network is unreachable|"
    r"Host is unreachable|Software caused connection abort)")
# the peer's address answered but nothing listened: its NCCL process is gone or never came up
PEER_REFUSED = re.compile(_CONNECT + r"Connection refused")
SOCKET_CONFIG = re.compile(
    r"Socket creation failed ?: ?(?P<why>[^\n]{0,80})|"
    r"(?P<noif>(?:Bootstrap|NET/Socket) ?: ?no (?:socket |NCCL_SOCKET_IFNAME )?interface "
    r"found)|"
    r"ncclSocketInit: connecting to address .{0,80}?with family (?P<family>\d+) is neither")
DUPLICATE_GPU = re.compile(r"Duplicate GPU detected ?: ?rank (?P<a>\d+) and rank (?P<b>\d+) "
                           r"both on CUDA device (?P<dev>\w+)")


def async_event_is_fault(event: str) -> bool:
    """Whether an IB async event (as NCCL printed it) is an error, not routine fabric news."""
    return event.strip().lower() not in _BENIGN_ASYNC


def socket_config_reason(m: re.Match[str]) -> str:
    if m["noif"]:
        return "no usable network interface found"
    if m["family"]:
        return "NCCL_SOCKET_IFNAME names no interface (invalid address family)"
    return f"socket creation failed: {m['why'].strip()}"
