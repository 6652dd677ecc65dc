"""The chat-completions wire format (vLLM, SGLang, Ollama, any OpenAI-compatible server) and
the Messages-shaped blocks the shared planner loop speaks: the request translated one way, the
answer (whole, or streamed as server-sent events with tool-call deltas) the other.

Self-hosted servers send tool-call arguments as JSON strings that can be invalid or cut short;
such a call keeps its name and carries its raw text under UNPARSED_ARGS, and the loop answers it
with a tool error the model can repair."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

from goodput_agent.planner.base import UNPARSED_ARGS


def to_openai_messages(system: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages-shaped history → chat-completions messages."""
    if isinstance(system, list):
        system = "\n".join(b.get("text", "") for b in system)
    out: list[dict[str, Any]] = [{"role": "system", "content": system or ""}]
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
        elif m["role"] == "assistant":
            out.append(_assistant(content))
        else:
            out.extend(_user(content))
    return out


def _assistant(content: list[dict[str, Any]]) -> dict[str, Any]:
    texts = [b.get("text", "") for b in content if b.get("type") == "text"]
    calls = [{"id": b["id"], "type": "function",
              "function": {"name": b["name"], "arguments": _arguments_text(b.get("input"))}}
             for b in content if b.get("type") == "tool_use"]
    # "" rather than null: llama.cpp's server (llama-cpp-python) rejects a null content with a
    # 500, where vLLM and OpenAI take either
    msg: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
    if calls:
        msg["tool_calls"] = calls
    return msg


def _arguments_text(args: Any) -> str:
    """What the model sent: its own (unparsable) text goes back as it was."""
    if isinstance(args, dict) and UNPARSED_ARGS in args:
        return str(args[UNPARSED_ARGS])
    return orjson.dumps(args if args is not None else {}).decode()


def _user(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in content:
        if b.get("type") == "tool_result":
            body = b.get("content", "")
            if isinstance(body, list):
                body = "\n".join(x.get("text", "") for x in body)
            out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": body})
    texts = [b.get("text", "") for b in content if b.get("type") == "text"]
    if texts:
        out.append({"role": "user", "content": "\n".join(texts)})
    return out


def to_openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "function",
             "function": {"name": t["name"], "description": t.get("description", ""),
                          "parameters": without_lengths(t.get("input_schema",
                                                              {"type": "object"}))}}
            for t in tools]


def without_lengths(schema: Any) -> Any:
    """The schema without string length bounds. Servers that constrain generation with a
    grammar built from the schema (llama.cpp) spell `maxLength: 2000` as 2000 nested rules,
    fail to parse that grammar, and the server process dies; the bounds are checked here on
    receipt anyway (the planner tools' pydantic models)."""
    if isinstance(schema, dict):
        return {k: without_lengths(v) for k, v in schema.items()
                if k not in ("maxLength", "minLength")}
    if isinstance(schema, list):
        return [without_lengths(v) for v in schema]
    return schema


def parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):  # a few servers send an object, not its JSON text
        return raw
    try:
        value = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return {UNPARSED_ARGS: str(raw)[:2000]}
    return value if isinstance(value, dict) else {UNPARSED_ARGS: str(raw)[:2000]}


def to_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": str(message["content"])})
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        blocks.append({"type": "tool_use", "id": call.get("id") or f"call_{i}",
                       "name": str(fn.get("name") or ""),
                       "input": parse_arguments(fn.get("arguments"))})
    return blocks


class StreamError(Exception):
    """The server sent an error event inside a stream that had answered 200."""


class NothingStreamed(StreamError):
    """A stream that answered 200 and ended without one event: llama.cpp's server does this
    when it cannot stream the answer asked for (its chatml-function-calling format raises
    "Automatic streaming tool choice is not supported" after the response began)."""


def sse_payloads(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON of each `data:` event until `[DONE]`; comments (`: ping`) and other fields are
    skipped. A stream that ends without a chunk (nothing, or `[DONE]` alone: no id, no text,
    no usage) raises NothingStreamed."""
    chunks = 0
    for raw in lines:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[len("data:"):].strip()
        if data == "[DONE]":
            break
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            chunks += 1  # a broken event says nothing we can use; the stream goes on
            continue
        if isinstance(payload, dict) and payload.get("error"):
            err = payload["error"]
            raise StreamError(str(err.get("message") if isinstance(err, dict) else err)[:300])
        if isinstance(payload, dict):
            chunks += 1
            yield payload
    if not chunks:  # a stream cut after some chunks keeps them: a cut call is a tool error
        raise NothingStreamed("the server answered 200 and then sent no chunk")


def assemble_stream(payloads: Iterable[dict[str, Any]],
                    on_text: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Stream chunks → one chat.completion: text pieces joined (each handed to on_text as it
    comes), tool calls gathered by index with their argument pieces concatenated in order."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    answer: dict[str, Any] = {"usage": {}}
    for chunk in payloads:
        answer["id"] = answer.get("id") or chunk.get("id")
        if chunk.get("usage"):
            answer["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
                if on_text is not None:
                    on_text(delta["content"])
            for d in delta.get("tool_calls") or []:
                _merge_call(calls, d)
    message = {"role": "assistant", "content": "".join(text) or None,
               "tool_calls": [calls[i] for i in sorted(calls)] or None}
    answer["choices"] = [{"index": 0, "message": message}]
    return answer


def _merge_call(calls: dict[int, dict[str, Any]], delta: dict[str, Any]) -> None:
    index = delta.get("index")
    index = index if isinstance(index, int) else len(calls)
    call = calls.setdefault(index, {"id": None, "type": "function",
                                    "function": {"name": "", "arguments": ""}})
    call["id"] = call["id"] or delta.get("id")
    fn = delta.get("function") or {}
    # servers send the name once; a few repeat it whole in every delta
    if fn.get("name") and not call["function"]["name"].endswith(fn["name"]):
        call["function"]["name"] += fn["name"]
    if isinstance(fn.get("arguments"), str):
        call["function"]["arguments"] += fn["arguments"]
