"""`goodput chat --openai-compatible` under a real pty, against the scripted chat-completions
server (fixture): a tool call shown, then an answer citing the evidence it saw."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.servers.chat_completions import call, last_tool_texts, reply, scripted_chat_completions
from tests.test_cli_chat import _Pty, claude_env  # noqa: F401 - the fixture is used by name


def test_chat_turn_on_a_self_hosted_model(claude_env: dict, demo_bundle: Path,  # noqa: F811
                                          tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        eid = next(m.group(1) for t in last_tool_texts(body) for line in t.splitlines()
                   if (m := re.match(r"\[E(\d+)\].*Xid", line)))
        return reply(text=f"Xid 79 on gpu-node-03 came first [E{eid}].")

    script = [reply(call("kernel_log_events", {"node": "gpu-node-03"})), answer]
    with scripted_chat_completions(script) as api:
        term = _Pty(["chat", str(demo_bundle), "--ledger", str(tmp_path / "l.duckdb"),
                     "--openai-compatible", "--base-url", api.url, "--model", "qwen-test"],
                    claude_env)
        term.read_until(r"> $")
        term.send("why did the job fail?")
        out = term.read_until(r"came first \[E\d+\]\.")
        assert "kernel_log_events" in out
        term.send("/quit")
        assert term.close() == 0
        requests = list(api.requests)
    assert requests[1]["messages"][-1]["role"] == "tool"
    assert requests[1]["messages"][-1]["content"].startswith("<untrusted-tool-output")
