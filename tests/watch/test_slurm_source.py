"""The Slurm source on sacct/sinfo text in the formats the commands print (22.05), through the
bundle's parsers: which ends are incidents, their keys, the cursor, the filters."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from goodput_agent.sources.slurm import SlurmCLI, SlurmOutput
from goodput_agent.watch.slurm_source import (
    OVERLAP,
    Cursor,
    SlurmFilters,
    SlurmWatchSource,
    floor_of,
    gpus_of,
    switches_of,
    system_uids,
)

HEADER = ("JobID|JobName|State|ExitCode|NodeList|NNodes|Start|End|Partition|Account|User|"
          "AllocTRES|Reason|Cluster")
ROWS = [
    "11|train|FAILED|1:0|gpu-node-01|1|2026-12-04T06:00:00|2026-12-04T06:10:00|gpu|ml|ana|"
    "billing=1,cpu=1,gres/gpu=8,node=1|None|c1",
    "12|fine|COMPLETED|0:0|gpu-node-01|1|2026-12-04T06:00:00|2026-12-04T06:10:01|gpu|ml|ana|"
    "cpu=1,node=1|None|c1",
    "13|mine|CANCELLED by 1000|0:15|gpu-node-02|1|2026-12-04T06:00:00|2026-12-04T06:10:02|"
    "gpu|ml|bob|cpu=1,node=1|None|c1",
    "14|sys|CANCELLED by 0|0:15|gpu-node-02|1|2026-12-04T06:00:00|2026-12-04T06:10:03|gpu|ml|"
    "bob|cpu=1,node=1|None|c1",
    # a requeued job: two attempts that each ended badly
    "15|rq|NODE_FAIL|0:0|gpu-node-[03-04]|2|2026-12-04T06:00:00|2026-12-04T06:05:00|gpu|ml|"
    "ana|cpu=2,gres/gpu:a100=4,node=2|None|c1",
    "15|rq|TIMEOUT|0:0|gpu-node-[03-04]|2|2026-12-04T06:06:00|2026-12-04T06:10:04|gpu|ml|ana|"
    "cpu=2,gres/gpu:a100=4,node=2|None|c1",
    "16|run|RUNNING|0:0|gpu-node-01|1|2026-12-04T06:09:00|Unknown|gpu|ml|ana|cpu=1|None|c1",
]
CONFIG = {"cluster": "c1", "uids": {0}}


def _source(filters: SlurmFilters | None = None) -> SlurmWatchSource:
    src = SlurmWatchSource(SlurmCLI(env={"TZ": "UTC", "PATH": "/nonexistent"}), filters)
    src._topology = (time.monotonic(), {"gpu-node-03": "leaf1", "gpu-node-04": "leaf1"})
    return src


def _triggers(src: SlurmWatchSource, cursor: Cursor | None = None):  # noqa: ANN202
    out = SlurmOutput(name="sacct.txt", what="t", argv=["sacct"], text="\n".join([HEADER, *ROWS]))
    return src._job_triggers(out, CONFIG, cursor or Cursor(end=datetime(2026, 1, 1, tzinfo=UTC)))


def test_which_ends_are_incidents_and_their_keys() -> None:
    triggers, newest = _triggers(_source())
    by_subject = {}
    for t in triggers:
        by_subject.setdefault(t.subject, []).append(t)
    assert sorted(by_subject) == ["11", "14", "15"]  # not COMPLETED, RUNNING, a user's cancel
    assert [t.state for t in by_subject["15"]] == ["NODE_FAIL", "TIMEOUT"]
    keys = [t.key for t in by_subject["15"]]
    assert len(set(keys)) == 2 and all(k.startswith("slurm:c1:15:") for k in keys)
    assert by_subject["15"][0].nodes == ["gpu-node-03", "gpu-node-04"]
    assert by_subject["15"][0].labels["switches"] == "leaf1"
    assert by_subject["14"][0].detail.startswith("cancelled by uid 0")
    assert by_subject["11"][0].labels == {"partition": "gpu", "account": "ml", "user": "ana",
                                          "cluster": "c1", "name": "train"}
    assert newest.end == datetime(2026, 12, 4, 6, 10, 4, tzinfo=UTC) and newest.job_id == "15"


def test_keys_are_stable_across_polls() -> None:
    first, _ = _triggers(_source())
    again, _ = _triggers(_source())
    assert [t.key for t in first] == [t.key for t in again]


def test_filters_min_nodes_and_gpus() -> None:
    triggers, _ = _triggers(_source(SlurmFilters(min_nodes=2)))
    assert {t.subject for t in triggers} == {"15"}
    triggers, _ = _triggers(_source(SlurmFilters(min_gpus=5)))
    assert {t.subject for t in triggers} == {"11"}


def test_sacct_arguments_carry_the_filters() -> None:
    src = _source(SlurmFilters(partitions=["gpu", "a100"], accounts=["ml"], users=["ana"]))
    argv = src._sacct_argv(datetime(2026, 12, 4, 6, tzinfo=UTC),
                           datetime(2026, 12, 4, 7, tzinfo=UTC))
    assert argv[argv.index("-r") + 1] == "gpu,a100" and argv[argv.index("-A") + 1] == "ml"
    assert argv[argv.index("-u") + 1] == "ana" and "-a" not in argv
    assert argv[argv.index("-S") + 1] == "2026-12-04T06:00:00"
    assert "-a" in _source()._sacct_argv(datetime(2026, 12, 4, tzinfo=UTC),
                                         datetime(2026, 12, 4, 1, tzinfo=UTC))


def test_helpers() -> None:
    assert gpus_of("billing=8,cpu=8,gres/gpu=8,mem=100G") == 8
    assert gpus_of("cpu=8,gres/gpu:a100=4,gres/gpu:h100=2") == 6
    assert gpus_of(None) == 0
    assert system_uids("SlurmUser               = slurm(64030)\n") == {0, 64030}
    topo = ("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gpu-[01-02]\n"
            "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=gpu-03\n"
            "SwitchName=top Level=1 LinkSpeed=1 Nodes=gpu-[01-03] Switches=s[0-1]\n")
    assert switches_of(topo) == {"gpu-01": "s0", "gpu-02": "s0", "gpu-03": "s1"}


def test_nothing_before_the_floor() -> None:
    src = _source()
    out = SlurmOutput(name="sacct.txt", what="t", argv=["sacct"], text="\n".join([HEADER, *ROWS]))
    floor = datetime(2026, 12, 4, 6, 10, 3, tzinfo=UTC)
    triggers, _ = src._job_triggers(out, CONFIG, Cursor(end=floor), floor)
    assert [t.subject for t in triggers] == ["14", "15"] and triggers[1].state == "TIMEOUT"


def test_a_later_poll_never_reaches_back_past_the_first_start() -> None:
    """The overlap a later poll re-reads stops at the watch's first start: a job that ended
    just before it was left out by the first poll and stays out (it is not news)."""
    first = datetime(2026, 12, 4, 6, 0, tzinfo=UTC)
    assert floor_of(Cursor(end=first, nodes_since=first), None) == first
    later = Cursor(end=first + timedelta(seconds=30), nodes_since=first)
    assert floor_of(later, later.model_dump_json()) == first
    moved_on = Cursor(end=first + timedelta(minutes=10), nodes_since=first)
    assert floor_of(moved_on, moved_on.model_dump_json()) == moved_on.end - OVERLAP
    older = Cursor(end=first + timedelta(seconds=30))  # a cursor stored before the first start
    assert floor_of(older, older.model_dump_json()) == older.end - OVERLAP  # was kept
