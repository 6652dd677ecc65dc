"""A failure question reads the decisive lines of every text file, whatever format it was
identified as (issue 24 class 1): a CUDA OOM pasted after a server's command line, a crash at
the end of a serving engine's log. Files of those formats count as read for the `unknown`."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.bundle import scan
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB (GPU 0; "
       "10.73 GiB total capacity; 9.85 GiB already allocated; 46.44 MiB free; 9.86 GiB reserved "
       "in total by PyTorch)")
COMMAND = ("python -u -m vllm.entrypoints.openai.api_server --host 0.0.0.0 --model "
           "mistralai/Mistral-7B-v0.1 --dtype half --gpu-memory-utilization 0.8 "
           "--max-model-len 4096\n```\n\nresults in:\n\n")
STATS = ("INFO 12-05 10:00:0{s} metrics.py:341] Avg prompt throughput: 0.0 tokens/s, Avg "
         "generation throughput: 12.3 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 "
         "reqs, GPU KV cache usage: 3.2%, CPU KV cache usage: 0.0%.\n")


@pytest.mark.parametrize(("text", "fmt"), [
    (COMMAND + "> " + OOM + "\n", "engine_config"),
    ("".join(STATS.format(s=s) for s in range(5)) + "ERROR 12-05 10:00:06 engine.py:1] " + OOM
     + "\n", "vllm_log"),
])
def test_a_crash_in_a_file_of_another_format_answers_the_failure(
        tmp_path: Path, text: str, fmt: str) -> None:
    b = tmp_path / "b"
    b.mkdir()
    (b / "server.txt").write_text(text)
    (b / "incident.yaml").write_text("question: why did the server crash?\n")
    assert [f.format for f in scan(b).files if f.rel_path == "server.txt"] == [fmt]
    with Ledger(tmp_path / "l.duckdb") as lg:
        report = investigate_bundle(b, lg)
    rc = report.root_cause
    assert (report.kind, rc.category) == ("failure", "gpu_oom"), rc
    assert rc.evidence[0].locator.startswith("server.txt:")


def test_without_the_crash_such_a_file_counts_as_read(tmp_path: Path) -> None:
    b = tmp_path / "b"
    b.mkdir()
    (b / "server.txt").write_text(COMMAND + "it started, and answers\n")
    (b / "incident.yaml").write_text("question: why did the job fail?\n")
    with Ledger(tmp_path / "l.duckdb") as lg:
        rc = investigate_bundle(b, lg).root_cause
    assert rc.category == "unknown" and "every line of its 1 file was read" in rc.summary
