"""A collective timeout that names no rank (the NCCL watchdog's C++ frames alone), with nothing
in the bundle that started it: a hang on a rank the bundle does not name, at the confidence of
ranks unheard; anything that can start a failure still wins over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.analysis.failure.hang_verdict import SILENCE_CONFIDENCE
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

FRAMES = """\
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x1554e8b12f86 in /opt/torch/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x1554e9e0f8f2 in /opt/torch/lib/libtorch_cuda.so)
frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x1554e9e16333 in /opt/torch/lib/libtorch_cuda.so)
frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c (0x1554e9e1871c in /opt/torch/lib/libtorch_cuda.so)
"""  # noqa: E501


def _root_cause(tmp_path: Path, text: str):
    b = tmp_path / "b"
    b.mkdir()
    (b / "train.log").write_text(text)
    with Ledger(tmp_path / "l.duckdb") as lg:
        return investigate_bundle(b, lg).root_cause


def test_a_rankless_timeout_alone_is_a_hang_on_an_unnamed_rank(tmp_path: Path) -> None:
    rc = _root_cause(tmp_path, "Epoch 12 done\n" + FRAMES)
    assert (rc.category, rc.rank, rc.node) == ("hang", None, None)
    assert rc.confidence == SILENCE_CONFIDENCE and rc.evidence


@pytest.mark.parametrize(("line", "category"), [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "gpu_oom"),
    ("NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=python, GPU has fallen off the bus.",
     "gpu_hardware"),
])
def test_what_can_start_a_failure_wins_over_it(tmp_path: Path, line: str, category: str) -> None:
    rc = _root_cause(tmp_path, line + "\n" + FRAMES)
    assert rc.category == category
