"""A free-text line that reads as a failure: its words, with its level and wording weighed; the
scan finds every spelling the regex knows (the prefilter's markers cover the vocabulary)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from goodput_agent.parsing.failure_words import (
    LINES_KEPT,
    reads_as_failure,
    unexplained_failure_lines,
)

# lines that state a failure in forms no parser here need know (one per word of the vocabulary)
FAILURES = [
    "/bin/bash: line 27: 318 Killed sh start.sh",
    "Container OOMKilled after 3m",
    "RuntimeError: CUDA out of memory while allocating",
    "Traceback (most recent call last):",
    "an exception was raised in worker 3",
    "FATAL: could not map the device",
    "Segmentation fault (core dumped)",
    "kernel panic - not syncing",
    "The pod was Evicted",
    "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus",
    "Aborted",
    "connect() timed out after 30 s",
    "ran for 600011 milliseconds before timing out",
    "job 3132467 exceeded MEM usage hard limit (2528 > 1126)",
    "worker terminated unexpectedly",
    "JOB 77 CANCELLED AT 2024-05-01T10:00:00",
    "node gpu-3 is NotReady",
    "GPU is lost",
    "DataLoader worker (pid 1) is killed by signal: Bus error.",
    "NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
    "request failed with status 503",
    "unable to open /dev/nvidia3",
    "cannot allocate memory",
    "could not connect to the store",
    "Connection refused",
    "host 10.0.0.4 unreachable",
    "permission denied",
    "invalid device ordinal",
    "an illegal memory access was encountered",
    "no route to host",
    "libcuda.so not found",
    "Watchdog timeout on collective",
    "(1) Resource exhausted: Attempting to allocate 180.59M. That was not possible.",
    "1488666.bat+      batch     bsc32      4 OUT_OF_ME+    0:125",  # sacct's cut state
    "4242|train|OUT_OF_MEMORY|0:125",
    "4243|train|PREEMPTED|0:0",
]
HARMLESS = [
    "NCCL INFO Failed to open libibverbs.so[.1]",  # an informational level says so
    "INFO 12-05 10:00:00 engine: request 12 failed over to replica 2",
    "I1205 10:00:00.000 kubelet.go:1] could not find the cached image, pulling",
    "[I] retrying: connection refused",
    "FutureWarning: `torch.cuda.amp.custom_fwd(args...)` is deprecated; invalid in 2.6",
    "pcieport 0000:00:1c.0: AER: Corrected error received: 0000:2d:00.0",
    "EDAC MC0: 4 CE error on CPU#0Channel#2_DIMM#0 (channel:2 slot:0 page:0x0)",
    "Namespace(lr=0.1, timeout=600, seed=3)",  # a setting, not an event
    "step 100 loss 2.31 lr 1e-4",
    "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.",
    "# HELP vllm:request_failure_total Number of failed requests.",
]


@pytest.mark.parametrize("line", FAILURES)
def test_a_line_that_states_a_failure_reads_as_one(line: str) -> None:
    assert reads_as_failure(line)


@pytest.mark.parametrize("line", HARMLESS)
def test_a_line_that_says_it_is_harmless_does_not(line: str) -> None:
    assert not reads_as_failure(line)


@pytest.mark.parametrize("level", ["NCCL INFO", "INFO", "[I]", "DEBUG"])
def test_a_strong_word_reads_as_a_failure_at_any_level(level: str) -> None:
    assert reads_as_failure(f"{level} worker 3 was killed by the OOM killer")
    assert not reads_as_failure(f"{level} worker 3 finished its shard")


def test_an_uncorrectable_error_is_not_excused_as_corrected() -> None:
    assert reads_as_failure("CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered")
    assert reads_as_failure("AER: Uncorrected (Non-Fatal) error received: 0000:3b:00.0")


@pytest.mark.parametrize("spelling", [str.lower, str.upper, str.capitalize, str.title])
def test_the_scan_finds_every_failure_line_in_each_spelling(tmp_path: Path, spelling) -> None:
    """The prefilter's literals must cover the regex's words in every usual spelling: a line the
    regex would count and the prefilter skips is a failure silently read as clean."""
    lines = [spelling(x) for x in FAILURES]
    f = tmp_path / "a.log"
    f.write_text("\n".join(["step 1 loss 2.0", *lines, "done"]) + "\n")
    found = unexplained_failure_lines(f, explained=())
    want = sum(reads_as_failure(x) for x in lines)
    assert want >= len(lines) - 2  # a spelling may turn a word harmless (INFO), not more
    assert found["unexplained"] == want


def test_lines_an_event_came_from_are_explained(tmp_path: Path) -> None:
    f = tmp_path / "a.log"
    f.write_text("ok\nTraceback (most recent call last):\nKeyError: 'x'\nok\nKilled\n")
    assert unexplained_failure_lines(f, explained=()) == {"unexplained": 3, "lines": [2, 3, 5]}
    assert unexplained_failure_lines(f, explained={2, 3}) == {"unexplained": 1, "lines": [5]}


def test_the_count_is_whole_and_the_lines_named_are_few(tmp_path: Path) -> None:
    f = tmp_path / "a.log.gz"
    with gzip.open(f, "wt") as fh:
        fh.write("".join(f"step {i}\nworker {i} Killed\n" for i in range(40)))
    found = unexplained_failure_lines(f, explained=())
    assert found["unexplained"] == 40
    assert found["lines"] == [2 * i + 2 for i in range(LINES_KEPT)]


AER_CORRECTED = """\
[   62.396809] pcieport 0000:00:1c.0: AER: Corrected error received: 0000:2d:00.0
[   62.396839] ath9k 0000:2d:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer
[   62.396846] ath9k 0000:2d:00.0:   device [168c:0034] error status/mask=00000001/00002000
[   62.396850] ath9k 0000:2d:00.0:    [ 0] Receiver Error
"""


def test_a_records_detail_lines_belong_to_its_first_line(tmp_path: Path) -> None:
    """A corrected error's detail lines are as harmless as the record; the same detail lines
    under an uncorrected one count, and so does a failure line that is not indented detail."""
    f = tmp_path / "dmesg.txt"
    f.write_text(AER_CORRECTED)
    assert unexplained_failure_lines(f, explained=())["unexplained"] == 0
    f.write_text(AER_CORRECTED.replace("Corrected", "Uncorrected (Non-Fatal)"))
    assert unexplained_failure_lines(f, explained=())["unexplained"] == 4
    f.write_text(AER_CORRECTED + "[   63.0] ath9k 0000:2d:00.0: firmware load failed\n")
    assert unexplained_failure_lines(f, explained=())["lines"] == [5]
