"""A scripted OpenAI chat-completions server (a FIXTURE, not a recording): it replays model
turns written by the tests, in the chat-completions response shape, on 127.0.0.1, and records
every request body. A turn is a reply dict (`message`, optional `usage`, optional
`stream_error`: an error event sent mid-stream), an error
(status, message), or a function of the request body returning one (so a scripted model can
cite the evidence ids the previous tool result showed it).

A request with `stream: true` is answered with server-sent events as vLLM sends them: the text
in pieces, each tool call's name once and its arguments cut into small pieces, the calls of one
turn interleaved by index, usage in a last chunk, then `data: [DONE]`."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ChatError:
    status: int
    message: str
    headers: dict[str, str] = field(default_factory=dict)


Turn = dict[str, Any] | ChatError
Script = list[Turn | Callable[[dict[str, Any]], Turn]]

_ids = iter(range(1, 10**9))


def call(name: str, args: Any, raw: str | None = None) -> dict[str, Any]:
    """One tool call; `raw` sends arguments that are not the JSON of `args` (truncated...)."""
    return {"id": f"call_{next(_ids)}", "type": "function",
            "function": {"name": name, "arguments": raw if raw is not None else json.dumps(args)}}


def reply(*calls: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": text, "tool_calls": list(calls) or None}}


def last_tool_texts(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for m in reversed(body["messages"]):
        if m["role"] != "tool":
            break
        out.append(str(m["content"]))
    return out


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def stream_chunks(message: dict[str, Any], size: int = 7) -> list[dict[str, Any]]:
    """One whole assistant message as the deltas a streaming server sends."""
    def delta(d: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": d, "finish_reason": None}]}

    chunks = [delta({"role": "assistant", "content": ""})]
    chunks += [delta({"content": p}) for p in pieces(message.get("content") or "", size)
               if p]
    calls = message.get("tool_calls") or []
    parts = [pieces(c["function"]["arguments"], size) for c in calls]
    for i, c in enumerate(calls):
        chunks.append(delta({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                             "function": {"name": c["function"]["name"],
                                                          "arguments": ""}}]}))
    for round_ in range(max((len(p) for p in parts), default=0)):
        for i, p in enumerate(parts):  # the calls' argument pieces interleave by index
            if round_ < len(p):
                chunks.append(delta({"tool_calls": [{"index": i,
                                                     "function": {"arguments": p[round_]}}]}))
    chunks.append({"choices": [{"index": 0, "delta": {},
                                "finish_reason": "tool_calls" if calls else "stop"}]})
    return chunks


@dataclass
class Server:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)  # each request's Authorization


@contextmanager
def scripted_chat_completions(script: Script) -> Iterator[Server]:
    turns = list(script)
    lock = threading.Lock()
    server_state = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:  # noqa: ANN401
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                server_state.requests.append(body)
                server_state.auth.append(self.headers.get("Authorization"))
                turn = turns.pop(0) if turns else ChatError(500, "script exhausted")
            if callable(turn):
                turn = turn(body)
            if isinstance(turn, ChatError):
                self._send(turn.status, {"error": {"message": turn.message}}, turn.headers)
                return
            usage = turn.get("usage") or {"prompt_tokens": len(json.dumps(body)) // 4,
                                          "completion_tokens": 20}
            if body.get("stream"):
                chunks = [*stream_chunks(turn["message"]), {"choices": [], "usage": usage}]
                if turn.get("stream_error"):  # the server fails after it began answering
                    chunks = [*chunks[:3], {"error": {"message": turn["stream_error"]}}]
                self._stream(chunks)
                return
            self._send(200, {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion",
                             "choices": [{"index": 0, "message": turn["message"],
                                          "finish_reason": "tool_calls"}], "usage": usage})

        def _stream(self, chunks: list[dict[str, Any]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for chunk in chunks:
                chunk = {"id": "chatcmpl-stream", "object": "chat.completion.chunk", **chunk}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

        def _send(self, status: int, payload: dict[str, Any],
                  headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server_state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        httpd.shutdown()
        httpd.server_close()
