"""The OpenAI chat-completions protocol (vLLM, SGLang, Ollama, any base URL) behind the same
interface as the Messages API client: `create(**request)` takes the Anthropic-shaped request the
Claude planner builds and returns a Turn whose content is Anthropic-shaped blocks, so the planner
loop, budgets, ledger records and approval gate are shared and only the wire protocol differs.

Retries (tenacity): 429, 5xx and connection errors, honouring `retry-after`; other 4xx are not
retried. Tool-call arguments arrive as JSON strings; one that does not parse is handed to the
loop as an invalid-arguments object so the tool answers with an error the model can repair."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import structlog
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from goodput_agent.planner.claude_client import DeadlineReached, Turn, retry_after_s
from goodput_agent.planner.claude_config import ClaudeSettings

log = structlog.get_logger(__name__)

INVALID_ARGS_KEY = "_unparsed_arguments"


class ToolsUnsupported(Exception):
    """The server refused a request because it does not support tools / tool_choice."""


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.TransportError):
        return True
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code in (408, 409, 429) or exc.response.status_code >= 500
    return False


def to_openai_messages(system: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic-shaped history → chat-completions messages."""
    if isinstance(system, list):
        system = "\n".join(b.get("text", "") for b in system)
    out: list[dict[str, Any]] = [{"role": "system", "content": system or ""}]
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        texts = [b.get("text", "") for b in content if b.get("type") == "text"]
        if m["role"] == "assistant":
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"],
                                   "arguments": orjson.dumps(b.get("input", {})).decode()}}
                     for b in content if b.get("type") == "tool_use"]
            msg: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
            continue
        for b in content:
            if b.get("type") == "tool_result":
                body = b.get("content", "")
                if isinstance(body, list):
                    body = "\n".join(x.get("text", "") for x in body)
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": body})
        if texts:
            out.append({"role": "user", "content": "\n".join(texts)})
    return out


def to_openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "function",
             "function": {"name": t["name"], "description": t.get("description", ""),
                          "parameters": t.get("input_schema", {"type": "object"})}}
            for t in tools]


def parse_arguments(raw: str | None) -> dict[str, Any]:
    try:
        value = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return {INVALID_ARGS_KEY: (raw or "")[:200]}
    return value if isinstance(value, dict) else {INVALID_ARGS_KEY: (raw or "")[:200]}


def to_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": str(message["content"])})
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        blocks.append({"type": "tool_use", "id": call.get("id") or f"call_{i}",
                       "name": str(fn.get("name", "")),
                       "input": parse_arguments(fn.get("arguments"))})
    return blocks


class ChatCompletionsClient:
    def __init__(self, settings: ClaudeSettings, sleep: Callable[[float], None] = time.sleep):
        self.settings = settings
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        base = (settings.base_url or "http://127.0.0.1:8000/v1").rstrip("/")
        self.http = httpx.Client(base_url=base, headers=headers)
        self._sleep = sleep

    def create(self, *, on_text: Callable[[str], None] | None = None,
               deadline: float | None = None, **request: Any) -> Turn:
        body = {"model": self.settings.model,
                "max_tokens": request.get("max_tokens", self.settings.max_tokens_per_turn),
                "messages": to_openai_messages(request.get("system"), request["messages"]),
                "tools": to_openai_tools(request.get("tools", [])), "tool_choice": "auto"}
        retrying = Retrying(retry=retry_if_exception(_retryable),
                            stop=stop_after_attempt(self.settings.retry.attempts),
                            wait=self._wait,
                            sleep=self._sleep, reraise=True)
        t0 = time.perf_counter()
        for attempt in retrying:
            with attempt:
                timeout = self.settings.request_timeout_s
                if deadline is not None:
                    timeout = min(timeout, deadline - time.monotonic())
                    if timeout <= 0:
                        raise DeadlineReached("no time was left for the call")
                answer = self._send(body, timeout)
        choice = (answer.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        usage = answer.get("usage") or {}
        blocks = to_blocks(message)
        if on_text is not None:
            for b in blocks:
                if b["type"] == "text":
                    on_text(b["text"])
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        turn = Turn(content=blocks, stop_reason=stop, request_id=answer.get("id"),
                    input_tokens=int(usage.get("prompt_tokens") or 0),
                    output_tokens=int(usage.get("completion_tokens") or 0),
                    cache_creation_tokens=0, cache_read_tokens=0,
                    duration_ms=(time.perf_counter() - t0) * 1000)
        log.info("chat_completions_call", model=self.settings.model, stop_reason=stop,
                 input_tokens=turn.input_tokens, output_tokens=turn.output_tokens)
        return turn

    def _wait(self, state: RetryCallState) -> float:
        """`retry-after` when the server sends one (capped), else exponential backoff."""
        exc = state.outcome.exception() if state.outcome else None
        r = self.settings.retry
        after = retry_after_s(exc)
        if after is not None:
            return min(after, r.retry_after_cap_s)
        return min(r.max_s, r.initial_s * 2 ** (state.attempt_number - 1))

    def _send(self, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        response = self.http.post("/chat/completions", json=body, timeout=timeout)
        if response.status_code in (400, 422) and "tool" in response.text.lower():
            raise ToolsUnsupported(response.text[:200])
        response.raise_for_status()
        return response.json()
