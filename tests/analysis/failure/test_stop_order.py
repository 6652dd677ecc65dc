"""A time limit or a preemption ends whatever was running: a failure printed above it in the
same file, with no time of its own, came before it and is the first cause (a real two-node
NCCL test's InfiniBand completion error, then four silent hours, then "DUE TO TIME LIMIT", had
come out `time_limit` at 0.9). The lines here are fixtures in the formats NCCL, PyTorch and
slurmstepd print (nodes, ranks and times invented)."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

PROGRESS = [" 0: broadcast result: tensor(-572.5027, device='cuda:0')\n",
            " 3: broadcast result: tensor(-572.5027, device='cuda:3')\n"]
FAULTS = {
    "network_fault": "10: gpu-b07:31641:32201 [0] transport/net_ib.cc:789 NCCL WARN NET/IB : "
                     "Got completion with error 12, opcode 1, len 0, vendor err 129\n",
    "application_error": " 5: Traceback (most recent call last):\n"
                         ' 5:   File "/opt/test.py", line 40, in <module>\n'
                         " 5:     run(args)\n"
                         " 5: KeyError: 'world_size'\n",
}
STOPS = {
    "time_limit": "slurmstepd: error: *** JOB 416593 ON gpu-b06 CANCELLED AT "
                  "2020-01-27T14:51:17 DUE TO TIME LIMIT ***\n",
    "preempted": "slurmstepd: error: *** JOB 416593 ON gpu-b06 CANCELLED AT "
                 "2020-01-27T14:51:17 DUE TO PREEMPTION ***\n",
}


def _verdict(tmp_path: Path, lines: list[str]):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "slurm-416593.out").write_text("".join(lines))
    with Ledger(tmp_path / "l.duckdb") as ledger:
        return investigate_bundle(bundle, ledger).root_cause


@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failure_above_the_stop_is_the_first_cause(tmp_path: Path, fault: str,
                                                     stop: str) -> None:
    rc = _verdict(tmp_path, [*PROGRESS, FAULTS[fault], *PROGRESS, STOPS[stop]])
    assert rc.category == fault
    if fault == "network_fault":
        assert (rc.node, rc.rank) == ("gpu-b07", 10)


@pytest.mark.parametrize("stop", list(STOPS))
def test_without_a_failure_above_it_the_stop_is_the_answer(tmp_path: Path, stop: str) -> None:
    assert _verdict(tmp_path, [*PROGRESS, STOPS[stop]]).category == stop


@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failure_printed_after_the_stop_does_not_displace_it(tmp_path: Path, fault: str,
                                                               stop: str) -> None:
    assert _verdict(tmp_path, [*PROGRESS, STOPS[stop], FAULTS[fault]]).category == stop
