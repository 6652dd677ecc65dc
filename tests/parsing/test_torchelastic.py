"""torchelastic error.json files, in the shapes error_handler.py writes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.core.events import Clock, EventKind, Role
from goodput_agent.parsing.base import ParseContext, ParseError
from goodput_agent.parsing.torchelastic import PARSER

CALLSTACK = """Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/\
__init__.py", line 355, in wrapper
    return f(*args, **kwargs)
  File "/work/train.py", line 41, in main
    loss = step(batch)
  File "/work/train.py", line 22, in step
    raise ValueError("labels missing from batch")
ValueError: labels missing from batch
"""

OOM_MESSAGE = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a "
               "total capacity of 79.15 GiB of which 512.00 MiB is free.")
OOM_CALLSTACK = ('Traceback (most recent call last):\n  File "/work/train.py", line 9, in main\n'
                 "    y = model(x)\ntorch.OutOfMemoryError: " + OOM_MESSAGE.split(": ", 1)[1]
                 + "\n")


def write(tmp_path: Path, doc: object, rel: str = "attempt_0/3/error.json", indent=None) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=indent))
    return path


def parse(path: Path, rel: str, **ctx):
    return PARSER.parse(path, ParseContext(rel_path=rel, **ctx))


def record(message: str, callstack: str, ts: str = "1714557600", **extra) -> dict:
    return {"message": {"message": message,
                        "extraInfo": {"py_callstack": callstack, "timestamp": ts}, **extra}}


def test_application_exception(tmp_path: Path) -> None:
    rel = "logs/torchelastic/none_abc/attempt_0/3/error.json"
    path = write(tmp_path, record("ValueError: labels missing from batch", CALLSTACK))
    res = parse(path, rel, rank_hint=11, node_hint="gpu-07")
    (e,) = res.events
    assert (e.kind, e.role, e.category) == (EventKind.python_exception, Role.primary,
                                            "application_error")
    assert (e.rank, e.node) == (11, "gpu-07")
    assert e.detail["local_rank"] == 3  # the attempt_0/<n>/ folder is a local rank
    assert e.detail["exc_type"] == "ValueError"
    assert e.detail["innermost_frame"] == {"file": "/work/train.py", "line": 22,
                                           "function": "step"}
    assert e.ts == datetime.fromtimestamp(1714557600, UTC) and e.clock == Clock.absolute
    assert e.locator.path == rel and e.locator.line_start == 1
    assert e.excerpt.startswith('{"message": {"message": "ValueError')
    assert res.facts == {"exc_type": "ValueError", "local_rank": 3, "rank": 11}


def test_cuda_oom_message_is_a_cuda_oom_event(tmp_path: Path) -> None:
    path = write(tmp_path, record(OOM_MESSAGE, OOM_CALLSTACK, errorCode=1), "rank5.error.json",
                 indent=2)
    (e,) = parse(path, "rank5.error.json").events
    assert (e.kind, e.role, e.category, e.rank) == (EventKind.cuda_oom, Role.primary, "gpu_oom",
                                                    5)
    assert e.detail["tried_bytes"] == int(1.5 * 1024**3)
    assert e.detail["free_bytes"] == 512 * 1024**2 and e.detail["gpu_index"] == 3
    assert e.detail["exc_type"] == "torch.OutOfMemoryError"  # the callstack names it fully
    assert e.detail["exitcode"] == 1
    assert e.locator.line_start == 3  # pretty-printed: the line holding the message


def test_string_message_variant_and_comm_symptom(tmp_path: Path) -> None:
    doc = {"message": "DistBackendError: NCCL communicator was aborted on rank 2.",
           "timestamp": "1714557601"}
    (e,) = parse(write(tmp_path, doc, "error.json"), "error.json").events
    assert (e.kind, e.role, e.category) == (EventKind.python_exception, Role.symptom, None)
    assert e.rank is None and e.detail["exc_type"] == "DistBackendError"
    assert e.ts == datetime.fromtimestamp(1714557601, UTC)


def test_signal_message_and_empty_file(tmp_path: Path) -> None:
    doc = {"message": "Signal 9 (SIGKILL) received by PID 4242", "timestamp": "0"}
    (e,) = parse(write(tmp_path, doc, "error.json"), "error.json").events
    assert (e.kind, e.role, e.detail["signal_name"]) == (EventKind.signal, Role.symptom,
                                                         "SIGKILL")
    assert e.ts is None and e.clock == Clock.none
    res = parse(write(tmp_path, {"message": "<NONE>"}, "e2/error.json"), "e2/error.json")
    assert res.events == [] and res.warnings


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"other": 1}'])
def test_unreadable_files_raise_parse_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "error.json"
    path.write_text(content)
    with pytest.raises(ParseError):
        parse(path, "error.json")


def test_sniff() -> None:
    assert PARSER.sniff(json.dumps(record("X: y", CALLSTACK)), "error.json")
    assert PARSER.sniff('{"message": "x", "timestamp": "1"}', "error.json")
    assert not PARSER.sniff('{"message": "x", "timestamp": "1"}', "events.json")
    assert not PARSER.sniff('{"traceEvents": []}', "trace.json")
    assert not PARSER.sniff("Traceback (most recent call last):", "error.json")
