"""The process tag Ray puts before each worker's output, and vLLM V1 before its processes'
("(RayTrainWorker pid=1234, ip=10.0.0.1) ", "(EngineCore_DP0 pid=494) "): the line under the
tag is read as if it stood alone, each tagged process's lines are its own stream (interleaved
tracebacks stay apart), and the tag's ip is the node. Before, every such traceback was a run of
lines that read as a failure and that no parser understood (a real vLLM V1 engine's start-up
failure came out `unknown` at 0.15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.core.events import Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER
from goodput_agent.parsing.job_log.prefixes import split_prefix


def _primary(tmp_path: Path, lines: list[str]) -> list:
    p = tmp_path / "driver.log"
    p.write_text("\n".join(lines) + "\n")
    return [e for e in PARSER.parse(p, ParseContext(rel_path="driver.log")).events
            if e.role == Role.primary]


def _traceback(tag: str, last: str) -> list[str]:
    return [f"{tag} Traceback (most recent call last):",
            f'{tag}   File "/opt/train.py", line 10, in <module>',
            f"{tag}     main()",
            f"{tag} {last}"]


@pytest.mark.parametrize(("tag", "node"), [
    ("(RayTrainWorker pid=1234, ip=10.0.0.1)", "10.0.0.1"),
    ("(TorchTrainer pid=88, ip=172.31.4.9)", "172.31.4.9"),
    ("(pid=91, ip=10.2.0.7)", "10.2.0.7"),
    ("(EngineCore_DP0 pid=494)", None),
    ("(VllmWorker rank=1 pid=3301)", None),
])
def test_a_tagged_traceback_is_read_and_placed(tmp_path: Path, tag: str,
                                               node: str | None) -> None:
    [e] = _primary(tmp_path, _traceback(tag, "KeyError: 'labels'"))
    assert (e.category, e.node) == ("application_error", node)
    assert (e.locator.line_start, e.locator.line_end) == (1, 4)


def test_interleaved_workers_tracebacks_stay_apart(tmp_path: Path) -> None:
    a = _traceback("(RayTrainWorker pid=1234, ip=10.0.0.1)",
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    b = _traceback("(RayTrainWorker pid=77, ip=10.0.0.2)",
                   "ValueError: Expected input batch_size (8) to match target batch_size (16)")
    lines = [line for pair in zip(a, b, strict=True) for line in pair]
    got = {(e.category, e.node) for e in _primary(tmp_path, lines)}
    assert got == {("gpu_oom", "10.0.0.1"), ("application_error", "10.0.0.2")}


@pytest.mark.parametrize(("line", "host", "pid"), [
    ("(raylet, ip=10.0.3.17) [2022-09-22 17:46:53,692 E 134 134] memory low", "10.0.3.17", None),
    ("(pid=91, ip=10.2.0.7) epoch 3", "10.2.0.7", 91),
    ("(APIServer pid=11574) INFO 03-17 15:38:10 [loggers.py:259] Engine 000", None, 11574),
])
def test_the_tags_host_and_process(line: str, host: str | None, pid: int | None) -> None:
    prefix, rest = split_prefix(line)
    assert (prefix.host, prefix.pid) == (host, pid)
    assert not rest.startswith("(")


@pytest.mark.parametrize("line", [
    "(raylet) node_manager.cc:3277: 2 Workers killed due to memory pressure (OOM)",
    "(autoscaler +1m2s) Tip: use `ray status` to view detailed cluster status.",
    "(0) Resource exhausted: Attempting to allocate 180.59M.",
])
def test_other_parentheses_are_not_a_process_tag(line: str) -> None:
    prefix, rest = split_prefix(line)
    assert (prefix.host, prefix.pid, rest) == (None, None, line)
