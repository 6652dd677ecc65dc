"""py-spy dumps, JSON and text, as py-spy 0.4 prints them (the JSON was captured from a real
`py-spy dump --json` of the gloo test job; the text form from a real `py-spy dump`)."""

from __future__ import annotations

import json

import pytest

from goodput_agent.parsing.pyspy_dump import DumpError, parse_dump

JSON = json.dumps([{
    "pid": 14358, "thread_id": 140, "thread_name": "MainThread", "os_thread_id": 14358,
    "active": False, "owns_gil": False, "frames": [
        {"name": "all_reduce", "filename": "/v/torch/distributed/distributed_c10d.py",
         "module": None, "short_filename": "torch/distributed/distributed_c10d.py",
         "line": 3252, "locals": None, "is_entry": True, "is_shim_entry": False},
        {"name": "main", "filename": "/w/gloo_job.py", "module": None,
         "short_filename": "gloo_job.py", "line": 63, "locals": None, "is_entry": False}],
    "process_info": None}])
TEXT = """Process 9835: /usr/bin/python3 -c import time; time.sleep(30)
Python v3.11.7 (/usr/bin/python3.11)

Thread 9835 (idle): "MainThread"
    <module> (<string>:1)
Thread 0x7F12 (active): "pt_autograd_0"
    run (threading.py:975)
"""


def test_json_and_text() -> None:
    d = parse_dump(JSON)
    main = d.main()
    assert d.pid == 14358 and main is not None and main.active is False
    assert main.frames[0].label() == "all_reduce (torch/distributed/distributed_c10d.py:3252)"
    t = parse_dump(TEXT)
    assert t.pid == 9835 and [th.name for th in t.threads] == ["MainThread", "pt_autograd_0"]
    assert t.threads[1].active and t.threads[1].frames[0].name == "run"


@pytest.mark.parametrize("text", ["", "[1, 2", "{}", "Error: Permission denied (os error 13)"])
def test_not_a_dump_is_one_error(text: str) -> None:
    with pytest.raises(DumpError):
        parse_dump(text)
