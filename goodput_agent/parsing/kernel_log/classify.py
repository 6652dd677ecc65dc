"""One kernel message to a Finding: the matchers in order, the first that knows it."""

from __future__ import annotations

from goodput_agent.parsing.kernel_log.finding import Finding
from goodput_agent.parsing.kernel_log.gpu_messages import (
    match_aer,
    match_device_plugin,
    match_gpu_driver,
    match_gsp,
    match_xid,
)
from goodput_agent.parsing.kernel_log.host_messages import (
    match_nic,
    match_node,
    match_oom,
    match_segfault,
)
from goodput_agent.parsing.kernel_log.prefixes import (
    MESSAGE_CHARS,
)

_MATCHERS = (match_xid, match_gpu_driver, match_gsp, match_device_plugin, match_oom,
             match_segfault, match_nic, match_node, match_aer)


def classify(msg: str) -> Finding | None:
    """The Event a kernel message stands for, or None (most kernel lines are not events)."""
    msg = msg[:MESSAGE_CHARS]
    if "_kgspLogXid119" in msg:  # the banner around a Xid 119 line, not an Xid of its own
        return None
    for matcher in _MATCHERS:
        hit = matcher(msg)
        if hit is not None:
            return hit
    return None
