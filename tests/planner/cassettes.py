"""vcrpy cassettes of real model servers, replayed in the fast tests.

A cassette is recorded from a real server only (never written by hand): llama.cpp's server
with the real small model (tests/servers/llama_server.py) for the chat-completions planner and
chat, or the Messages API with a key. Re-record them all with one command:

    GOODPUT_RECORD_CASSETTES=1 .venv/bin/python -m pytest tests/planner/test_cassettes.py

(llama.cpp's server is built and started as the real-server tests do; the Messages API
cassette is recorded only where ANTHROPIC_API_KEY is set, and skipped otherwise.)

Replay is strict, so a cassette stays true to the code: every request the code sends must equal
the next recorded one (method, path and the whole JSON body, with only volatile values masked:
investigation ids, and this checkout's path, which differs between clones), in order, and every
recorded request must be sent. A change to the prompt, the tool list or the history the loop
sends fails the test until the cassettes are recorded again. API keys never reach a cassette
(headers filtered when recording)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import vcr
from vcr.cassette import Cassette

HERE = Path(__file__).resolve().parent / "cassettes"
REPO = Path(__file__).resolve().parents[2]
RECORD_ENV = "GOODPUT_RECORD_CASSETTES"
REPLAY_URL = "http://127.0.0.1:9/v1"  # never connected to: vcrpy answers from the cassette
SECRET_HEADERS = ["authorization", "x-api-key", "anthropic-api-key", "cookie", "set-cookie"]
_VOLATILE = [(re.compile(r"inv-\d{8}-\d{6}-[0-9a-f]{8}"), "inv-ID"),
             (re.compile(re.escape(str(REPO))), "REPO")]


def recording() -> bool:
    return os.environ.get(RECORD_ENV, "") not in ("", "0")


def canonical_body(body: bytes | str | None) -> str:
    """The request body as compared: JSON with sorted keys, volatile values masked."""
    if body is None:
        return ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    with suppress(ValueError):
        text = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    for pattern, mask in _VOLATILE:
        text = pattern.sub(mask, text)
    return text


def _same_body(r1: Any, r2: Any) -> None:  # noqa: ANN401 - vcrpy's Request
    a, b = canonical_body(r1.body), canonical_body(r2.body)
    if a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))
        raise AssertionError(f"request body differs from the cassette at character {at}: "
                             f"sent ...{a[max(0, at - 80):at + 80]!r}... recorded "
                             f"...{b[max(0, at - 80):at + 80]!r}...")


def _path(r1: Any, r2: Any) -> None:  # noqa: ANN401 - host and port differ (replay URL)
    if r1.path != r2.path:
        raise AssertionError(f"path {r1.path} differs from the cassette's {r2.path}")


def _scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers") or {}
    for name in list(headers):
        if name.lower() in SECRET_HEADERS:
            headers.pop(name)
    return response


def _vcr(record: bool) -> vcr.VCR:
    v = vcr.VCR(record_mode="all" if record else "none", filter_headers=SECRET_HEADERS,
                before_record_response=_scrub_response, decode_compressed_response=True,
                match_on=["method", "path", "body"], serializer="yaml")
    v.register_matcher("path", _path)
    v.register_matcher("body", _same_body)
    return v


@contextmanager
def cassette(name: str, record: bool | None = None, library: Path = HERE
             ) -> Iterator[Cassette]:
    """Replay `name` (strict, in order), or record it from the real server when `record`."""
    record = recording() if record is None else record
    path = library / f"{name}.yaml"
    if not record and not path.is_file():
        raise FileNotFoundError(f"{path}: no cassette; record it with {RECORD_ENV}=1")
    with _vcr(record).use_cassette(str(path), allow_playback_repeats=False) as cas:
        yield cas
    if not record:
        assert cas.all_played, (f"{path.name}: {len(cas.data) - cas.play_count} recorded "
                                "requests were not sent (the code now asks less)")


def assert_no_secrets(path: Path, *secrets: str) -> None:
    text = path.read_text()
    for s in secrets:
        assert s not in text, f"{path.name} holds a secret"
