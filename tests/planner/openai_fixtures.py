"""Scripted turns of a self-hosted model (fixtures) for the chat-completions fixture server:
an investigation that cites the evidence ids its tool results showed, and a chat answer. Used
by the tests and by the runtime-only CI smoke (.ci/smoke_runtime.py)."""

from __future__ import annotations

import re
from typing import Any

from tests.servers.chat_completions import Script, call, last_tool_texts, reply


def cite(body: dict[str, Any], pattern: str) -> int:
    """The evidence id of the first shown line matching `pattern` in the last tool results."""
    for text in last_tool_texts(body):
        for line in text.splitlines():
            m = re.match(r"\[E(\d+)\]", line)
            if m and re.search(pattern, line):
                return int(m.group(1))
    raise AssertionError(f"no shown evidence line matches {pattern!r}")


def xid_claim(body: dict[str, Any]) -> dict[str, Any]:
    return reply(call("record_claim", {
        "statement": "GPU on gpu-node-03 fell off the bus (Xid 79) first",
        "category": "gpu_hardware", "confidence": 0.85, "status": "supported",
        "supporting": [cite(body, r"Xid.*79|79.*Xid")], "node": "gpu-node-03"}))


def finish(body: dict[str, Any]) -> dict[str, Any]:
    claim = next(int(m.group(1)) for t in last_tool_texts(body)
                 if (m := re.search(r"recorded claim (\d+)", t)))
    return reply(call("finish_investigation", {
        "kind": "failure", "category": "gpu_hardware", "confidence": 0.85,
        "summary": "Xid 79 on gpu-node-03 started it; the NCCL timeouts are symptoms",
        "verdict_claim_id": claim, "node": "gpu-node-03", "alternatives": [],
        "retry": {"useful": True, "why": "after draining gpu-node-03"}}))


def happy_script() -> Script:
    """Read the kernel log, claim the Xid citing its evidence id, conclude."""
    return [reply(call("kernel_log_events", {})), xid_claim, finish]


def chat_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A chat answer citing the Xid line the last tool result showed."""
    return reply(text=f"Xid 79 on gpu-node-03 came first [E{cite(body, 'Xid')}].")


def chat_script() -> Script:
    return [reply(call("kernel_log_events", {"node": "gpu-node-03"})), chat_answer]
