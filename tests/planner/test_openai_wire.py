"""The chat-completions wire format: streamed answers reassembled from their deltas (tool-call
arguments in pieces, several calls interleaved by index, `[DONE]`), arguments that are not
JSON kept as text, and the Messages-shaped history translated for the server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from goodput_agent.planner.base import UNPARSED_ARGS
from goodput_agent.planner.openai_wire import (
    NothingStreamed,
    StreamError,
    assemble_stream,
    parse_arguments,
    sse_payloads,
    to_blocks,
    to_openai_messages,
)
from tests.servers.chat_completions import call, reply, stream_chunks


def sse(chunks: list[dict[str, Any]], done: bool = True) -> list[bytes]:
    lines = [b": keep-alive"]
    for c in chunks:
        lines += [f"data: {json.dumps(c)}".encode(), b""]
    return lines + ([b"data: [DONE]", b"data: {\"after\": \"done\"}"] if done else [])


def test_interleaved_tool_call_deltas_reassemble() -> None:
    message = reply(call("kernel_log_events", {"node": "gpu-node-03", "limit": 50}),
                    call("job_log_events", {"rank": 12}), text="Looking at both logs.")
    chunks = stream_chunks(message["message"], size=3)
    # the pieces really are cut and interleaved: index 1 arrives before index 0 is complete
    order = [c["choices"][0]["delta"]["tool_calls"][0]["index"] for c in chunks
             if c.get("choices") and c["choices"][0]["delta"].get("tool_calls")]
    assert order.index(1) < len(order) - 1 - order[::-1].index(0)
    texts: list[str] = []
    answer = assemble_stream(sse_payloads(sse(chunks + [{"choices": [], "usage": {
        "prompt_tokens": 120, "completion_tokens": 30}}])), texts.append)
    blocks = to_blocks(answer["choices"][0]["message"])
    assert "".join(texts) == "Looking at both logs." and len(texts) > 1
    assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_use"]
    assert blocks[1]["name"] == "kernel_log_events"
    assert blocks[1]["input"] == {"node": "gpu-node-03", "limit": 50}
    assert blocks[2]["input"] == {"rank": 12}
    assert blocks[1]["id"] != blocks[2]["id"]
    assert answer["usage"]["completion_tokens"] == 30


def test_stream_stops_at_done_and_raises_an_error_event() -> None:
    payloads = list(sse_payloads(sse([{"choices": []}])))
    assert payloads == [{"choices": []}]  # nothing after [DONE], comments skipped
    with pytest.raises(StreamError, match="overloaded"):
        list(sse_payloads([b'data: {"error": {"message": "overloaded"}}']))


@pytest.mark.parametrize("lines", [[], [b": ping"], [b"data: [DONE]"]])
def test_a_stream_that_carries_no_chunk_is_nothing_streamed(lines: list[bytes]) -> None:
    """Nothing, or `[DONE]` alone: no id, no text, no usage; the client then asks whole
    rather than record an empty answer as the model's."""
    with pytest.raises(NothingStreamed):
        list(sse_payloads(lines))


def test_truncated_stream_arguments_are_kept_as_text() -> None:
    message = reply(call("kernel_log_events", {}, raw='{"node": "gpu-'))["message"]
    answer = assemble_stream(sse_payloads(sse(stream_chunks(message), done=False)))
    block = to_blocks(answer["choices"][0]["message"])[0]
    assert block["input"] == {UNPARSED_ARGS: '{"node": "gpu-'}


@pytest.mark.parametrize("raw", ['{"a": 1', "[1, 2]", "null", "not json"])
def test_arguments_that_are_not_an_object(raw: str) -> None:
    assert parse_arguments(raw) == {UNPARSED_ARGS: raw}


def test_history_translation_keeps_calls_results_and_text() -> None:
    history = [{"role": "user", "content": "why?"},
               {"role": "assistant", "content": [
                   {"type": "text", "text": "checking"},
                   {"type": "tool_use", "id": "c1", "name": "kernel_log_events",
                    "input": {"node": "n1"}},
                   {"type": "tool_use", "id": "c2", "name": "x", "input": {UNPARSED_ARGS: "{"}}]},
               {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "c1", "content": "result"},
                   {"type": "tool_result", "tool_use_id": "c2", "content": "error: invalid",
                    "is_error": True},
                   {"type": "text", "text": "Finish now."}]}]
    out = to_openai_messages([{"type": "text", "text": "sys"}], history)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "tool", "user"]
    calls = out[2]["tool_calls"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"node": "n1"}
    assert calls[1]["function"]["arguments"] == "{"
    assert out[3]["tool_call_id"] == "c1" and out[4]["content"] == "error: invalid"


class _Answer:
    def __init__(self, status: int, message: str) -> None:
        self.status_code, self.text = status, json.dumps({"error": {"message": message}})

    def json(self) -> Any:  # noqa: ANN401
        return json.loads(self.text)


@pytest.mark.parametrize(("status", "message", "kind"), [
    (400, "This model's maximum context length is 32768 tokens. However, you requested 40100 "
          "tokens (36004 in the messages, 4096 in the completion).", "ContextTooLong"),
    (400, "The input (40100 tokens) is longer than the model's context length (32768 tokens).",
     "ContextTooLong"),
    (400, "the request exceeds the available context size, try increasing it", "ContextTooLong"),
    (400, "context_length_exceeded", "ContextTooLong"),
    (400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be '
          "set", "ToolsUnsupported"),
    (400, "registry.ollama.ai/library/gemma:2b does not support tools", "ToolsUnsupported"),
    (400, "tools param requires --jinja flag", "ToolsUnsupported"),
    (400, "invalid value for temperature", "ServerError"),
    (503, "model is loading", "ServerError"),
])
def test_server_errors_are_told_apart(status: int, message: str, kind: str) -> None:
    from goodput_agent.planner.openai_client import retryable, server_error

    err = server_error(_Answer(status, message))  # type: ignore[arg-type]
    assert type(err).__name__ == kind and err.status_code == status
    assert retryable(err) == (status >= 500)
