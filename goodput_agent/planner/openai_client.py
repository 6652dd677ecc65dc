"""The OpenAI chat-completions protocol (vLLM, SGLang, Ollama, any base URL) behind the same
interface as the Messages API client: `create(**request)` takes the Messages-shaped request the
shared planner loop builds and returns a Turn of Messages-shaped blocks, so the loop, budgets,
ledger records and approval gate are shared and only the wire protocol differs (openai_wire).

HTTP through `requests` (a declared dependency). Retries are the shared policy (RetryingClient:
tenacity, `retry-after`, the deadline); here 408/409/429, 5xx, connection errors, read timeouts
and errors inside a stream are retried, other 4xx are not. A 400 saying the context is too long
raises ContextExceeded (the loop compacts and asks again); one about tools, ToolsUnsupported."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import requests
import structlog

from goodput_agent.planner.claude_client import (
    ContextExceeded,
    DeadlineReached,
    ModelCallFailed,
    RetryingClient,
    Turn,
)
from goodput_agent.planner.openai_wire import (
    NothingStreamed,
    StreamError,
    assemble_stream,
    sse_payloads,
    to_blocks,
    to_openai_messages,
    to_openai_tools,
)

log = structlog.get_logger(__name__)

# how servers say that the prompt does not fit (vLLM and OpenAI; OpenAI's error code; SGLang,
# llama.cpp, Ollama; Anthropic-style gateways)
CONTEXT_PHRASES = re.compile(
    r"maximum context length|context[ _]length[ _]exceeded"
    r"|(?:longer than|exceeds?) (?:the )?(?:model'?s )?(?:available )?(?:maximum )?context"
    r"|exceed_context_size|prompt is too long|too many tokens", re.I)
# and that it cannot do tools (vLLM without --enable-auto-tool-choice, Ollama, llama.cpp)
TOOLS_PHRASES = re.compile(
    r"tool.?choice|tool.?call.?parser|does not support tools|tools? (?:is|are) not supported"
    r"|tools? param\w* requires", re.I)


class ServerError(ModelCallFailed):
    """An HTTP error answer; `response` carries the headers (retry-after)."""

    def __init__(self, status_code: int, text: str, response: Any = None) -> None:  # noqa: ANN401
        super().__init__(f"HTTP {status_code}: {text[:200]}")
        self.status_code, self.text, self.response = status_code, text, response


class ToolsUnsupported(ServerError):
    """The server refused a request because it does not support tools / tool_choice."""


class ContextTooLong(ServerError, ContextExceeded):
    """The chat-completions flavour of ContextExceeded."""


def retryable(exc: BaseException) -> bool:
    if isinstance(exc, (requests.ConnectionError, requests.Timeout, StreamError,
                        requests.exceptions.ChunkedEncodingError)):  # a stream cut short
        return True
    if isinstance(exc, ServerError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def server_error(response: requests.Response) -> ServerError:
    text = response.text
    try:
        err = response.json().get("error")
        text = str(err.get("message") if isinstance(err, dict) else err or text)
    except (ValueError, AttributeError):
        pass
    if response.status_code in (400, 413, 422) and CONTEXT_PHRASES.search(text):
        return ContextTooLong(response.status_code, text, response)
    if response.status_code in (400, 422) and TOOLS_PHRASES.search(text):
        return ToolsUnsupported(response.status_code, text, response)
    return ServerError(response.status_code, text, response)


class ChatCompletionsClient(RetryingClient):
    retryable = staticmethod(retryable)
    event = "chat_completions_retry"

    def __init__(self, settings: Any, sleep: Callable[[float], None] = time.sleep,  # noqa: ANN401
                 on_progress: Callable[[str, int], None] | None = None) -> None:
        """`on_progress(event, size)`: told "request" as each request goes out, "chunk" with
        the size of each streamed chunk, and "answer" when an answer is whole (a terminal's
        progress line); with it answers are streamed where the server can."""
        super().__init__(settings, sleep)
        self.on_progress = on_progress
        self.streams = True  # False once the server sent nothing for a streamed request
        self.http = requests.Session()
        self.http.headers["Content-Type"] = "application/json"
        if settings.api_key:
            self.http.headers["Authorization"] = f"Bearer {settings.api_key}"
        self.url = (settings.base_url or "http://127.0.0.1:8000/v1").rstrip("/") + \
            "/chat/completions"

    def body(self, request: dict[str, Any], stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": request.get("max_tokens", self.settings.max_tokens_per_turn),
            "messages": to_openai_messages(request.get("system"), request["messages"])}
        for name in ("temperature", "seed"):
            if getattr(self.settings, name, None) is not None:
                body[name] = getattr(self.settings, name)
        if request.get("tools"):
            body |= {"tools": to_openai_tools(request["tools"]), "tool_choice": "auto"}
        if stream:
            body |= {"stream": True, "stream_options": {"include_usage": True}}
        return body

    def create(self, *, on_text: Callable[[str], None] | None = None,
               deadline: float | None = None, **request: Any) -> Turn:
        """One model turn; streamed when configured or when `on_text` wants the pieces."""
        asked = getattr(self.settings, "stream", None)
        stream = (on_text is not None or self.on_progress is not None) if asked is None \
            else bool(asked)
        stream = stream and self.streams
        body = self.body(request, stream)
        try:
            for attempt in self._retrying(deadline):
                with attempt:
                    timeout, by_deadline = self._timeout(deadline)
                    t0 = time.perf_counter()
                    answer = self._attempt(body if self.streams else self.body(request, False),
                                           timeout, by_deadline, on_text, deadline)
        except (requests.RequestException, StreamError) as exc:
            raise ModelCallFailed(f"{type(exc).__name__} from {self.url}") from exc
        return self._turn(answer, (time.perf_counter() - t0) * 1000)

    def _attempt(self, body: dict[str, Any], timeout: float, by_deadline: bool,
                 on_text: Callable[[str], None] | None, deadline: float | None
                 ) -> dict[str, Any]:
        try:
            return self._send(body, timeout, on_text, deadline)
        except NothingStreamed:
            # a server that cannot stream this answer: ask it whole, now and from now on
            log.warning("stream_refused", url=self.url, model=self.settings.model)
            self.streams = False
            self.http.close()  # that connection is in no state to be reused
            whole = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
            return self._send(whole, timeout, on_text, deadline)
        except requests.Timeout as exc:
            if by_deadline:
                raise DeadlineReached(f"the call was cut after {timeout:.3g} s") from exc
            raise

    def _turn(self, answer: dict[str, Any], duration_ms: float) -> Turn:
        choice = (answer.get("choices") or [{}])[0]
        blocks = to_blocks(choice.get("message") or {})
        usage = answer.get("usage") or {}
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        turn = Turn(content=blocks, stop_reason=stop, request_id=answer.get("id"),
                    input_tokens=int(usage.get("prompt_tokens") or 0),
                    output_tokens=int(usage.get("completion_tokens") or 0),
                    cache_creation_tokens=0, cache_read_tokens=0, duration_ms=duration_ms)
        log.info("chat_completions_call", model=self.settings.model, stop_reason=stop,
                 input_tokens=turn.input_tokens, output_tokens=turn.output_tokens,
                 ms=round(duration_ms, 1))
        return turn

    def _send(self, body: dict[str, Any], timeout: float,
              on_text: Callable[[str], None] | None, deadline: float | None) -> dict[str, Any]:
        if self.on_progress is not None:
            self.on_progress("request", 0)
        try:
            return self._post(body, timeout, on_text, deadline)
        finally:
            if self.on_progress is not None:
                self.on_progress("answer", 0)

    def _post(self, body: dict[str, Any], timeout: float,
              on_text: Callable[[str], None] | None, deadline: float | None) -> dict[str, Any]:
        with self.http.post(self.url, json=body, timeout=timeout,
                            stream=bool(body.get("stream"))) as response:
            if response.status_code >= 400:
                raise server_error(response)
            if "text/event-stream" not in response.headers.get("Content-Type", ""):
                try:  # a server may answer whole even when asked to stream
                    answer = response.json()
                except ValueError:
                    raise ServerError(502, "the answer is not JSON: "
                                      f"{response.text[:100]!r}", response) from None
                if on_text is not None:
                    for b in to_blocks((answer.get("choices") or [{}])[0].get("message") or {}):
                        if b["type"] == "text":
                            on_text(b["text"])
                return answer
            return assemble_stream(_until(deadline, sse_payloads(response.iter_lines()),
                                          self.on_progress), on_text)


def _until(deadline: float | None, payloads: Iterator[dict[str, Any]],
           on_progress: Callable[[str, int], None] | None = None
           ) -> Iterator[dict[str, Any]]:
    """The stream's chunks; a stream still going at the deadline is cut here (the read
    timeout bounds each wait, this the whole)."""
    for payload in payloads:
        if deadline is not None and time.monotonic() >= deadline:
            raise DeadlineReached("the streamed answer was cut at the deadline")
        if on_progress is not None:
            on_progress("chunk", sum(len(str(c.get("delta") or ""))
                                     for c in payload.get("choices") or []))
        yield payload
