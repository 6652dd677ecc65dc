"""A scripted Messages API server (a FIXTURE, not a recording): it replays model turns written
by the tests, in the Messages API's response shapes (JSON, or server-sent events when the request
asks to stream), on 127.0.0.1, and records every request it receives (headers and body).

The real anthropic SDK is pointed at it with base_url. A turn is a fixture reply, a fixture
error, or a function of the request body returning one (so a scripted model can cite the
evidence ids the previous tool result showed it)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FixtureReply:
    content: list[dict[str, Any]]
    stop_reason: str | None = None  # default: tool_use when a tool is used, else end_turn
    input_tokens: int | None = None  # default: the request's JSON size / 4
    output_tokens: int = 20
    fail_midstream: bool = False  # streamed: an overloaded_error event after message_start
    delay_s: float = 0.0  # the server waits this long before answering (a slow model)
    stall_midstream_s: float = 0.0  # streamed: the wait after the first text delta


@dataclass
class FixtureError:
    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


FixtureTurn = FixtureReply | FixtureError
Script = list[FixtureTurn | Callable[[dict[str, Any]], FixtureTurn]]


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


_ids = iter(range(1, 10**9))


def tool_use(name: str, args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_fixture_{next(_ids):04d}", "name": name,
            "input": args}


def last_tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the last user message of a request."""
    msg = body["messages"][-1]
    if msg["role"] != "user" or not isinstance(msg["content"], list):
        return []
    return [b for b in msg["content"] if b.get("type") == "tool_result"]


def evidence_ids(body: dict[str, Any]) -> list[int]:
    """Every [E<id>] the model was shown in the last tool results, in order."""
    found: list[int] = []
    for b in last_tool_results(body):
        content = b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
        found += [int(x) for x in re.findall(r"\[E(\d+)\]", content)]
    return found


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedMessagesAPI:
    def __init__(self, script: Script):
        self.script = list(script)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._n = 0
        self._stopping = threading.Event()  # ends a delayed answer's wait when the server stops
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def next_turn(self, body: dict[str, Any]) -> FixtureReply | FixtureError:
        with self._lock:
            self._n += 1
            if not self.script:
                return FixtureError(400, "invalid_request_error", "fixture script exhausted")
            turn = self.script.pop(0)
        if not callable(turn):
            return turn
        try:
            return turn(body)
        except Exception as exc:  # noqa: BLE001 - a broken fixture answers 400, never retried
            return FixtureError(400, "invalid_request_error", f"fixture turn failed: {exc!r}")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw or b"{}")
                with server._lock:
                    server.requests.append(Recorded(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    n = len(server.requests)
                turn = server.next_turn(body)
                if isinstance(turn, FixtureError):
                    self._json(turn.status, {"type": "error", "error": {
                        "type": turn.error_type, "message": turn.message}},
                        {**turn.headers, "request-id": f"req_fixture_{n:04d}"})
                    return
                msg = _message(turn, body, n)
                if turn.delay_s and server._stopping.wait(turn.delay_s):
                    self.close_connection = True
                    return  # stopped while waiting: the client gave up long ago
                try:
                    if body.get("stream"):
                        self._sse(msg, n, turn.fail_midstream, turn.stall_midstream_s)
                    else:
                        self._json(200, msg, {"request-id": f"req_fixture_{n:04d}"})
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped waiting (its timeout) before the answer came

            def _json(self, status: int, obj: Any, headers: dict[str, str]) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, msg: dict[str, Any], n: int, fail: bool = False,
                     stall_s: float = 0.0) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("request-id", f"req_fixture_{n:04d}")
                self.send_header("connection", "close")
                self.end_headers()
                for i, event in enumerate(_stream_events(msg)):
                    if fail and i == 2:
                        event = {"type": "error", "error": {"type": "overloaded_error",
                                                           "message": "Overloaded"}}
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                                     .encode())
                    self.wfile.flush()
                    if fail and i == 2:
                        break
                    if stall_s and event["type"] == "content_block_delta":
                        if server._stopping.wait(stall_s):
                            break  # stopped while stalling
                        stall_s = 0.0
                self.close_connection = True

        return Handler

    def start(self) -> ScriptedMessagesAPI:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _message(turn: FixtureReply, body: dict[str, Any], n: int) -> dict[str, Any]:
    uses_tool = any(b["type"] == "tool_use" for b in turn.content)
    return {"id": f"msg_fixture_{n:04d}", "type": "message", "role": "assistant",
            "model": body.get("model", "fixture"), "content": turn.content,
            "stop_reason": turn.stop_reason or ("tool_use" if uses_tool else "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": turn.input_tokens if turn.input_tokens is not None
                      else len(json.dumps(body)) // 4,
                      "output_tokens": turn.output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def _stream_events(msg: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The Messages API's streaming sequence: message_start, per block start/deltas/stop,
    message_delta (stop reason, output tokens), message_stop; a ping along the way."""
    start = {**msg, "content": [], "stop_reason": None,
             "usage": {**msg["usage"], "output_tokens": 1}}
    yield {"type": "message_start", "message": start}
    yield {"type": "ping"}
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            yield {"type": "content_block_start", "index": i,
                   "content_block": {"type": "text", "text": ""}}
            words = re.findall(r"\S+\s*", block["text"]) or [""]
            for w in words:
                yield {"type": "content_block_delta", "index": i,
                       "delta": {"type": "text_delta", "text": w}}
        else:
            yield {"type": "content_block_start", "index": i,
                   "content_block": {**block, "input": {}}}
            raw = json.dumps(block["input"])
            for k in range(0, len(raw), 16):
                yield {"type": "content_block_delta", "index": i,
                       "delta": {"type": "input_json_delta", "partial_json": raw[k:k + 16]}}
        yield {"type": "content_block_stop", "index": i}
    yield {"type": "message_delta",
           "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
           "usage": {"output_tokens": msg["usage"]["output_tokens"]}}
    yield {"type": "message_stop"}


@contextmanager
def scripted_messages_api(script: Script) -> Iterator[ScriptedMessagesAPI]:
    server = ScriptedMessagesAPI(script).start()
    try:
        yield server
    finally:
        server.stop()
