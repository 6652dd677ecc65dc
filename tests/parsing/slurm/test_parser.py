import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.core.events import Clock, EventKind, Role
from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.lines import read_head
from goodput_agent.parsing.slurm import (
    PARSERS,
    SACCT_JSON,
    SACCT_PIPE,
    SACCT_TABLE,
    SCONTROL_JOB,
    SCONTROL_NODE,
    SINFO,
    SINFO_REASONS,
    SLURM_NODES_JSON,
    outcomes,
)
from goodput_agent.parsing.slurm.records import normalize_state, parse_duration, parse_exit_code
from goodput_agent.parsing.slurm.sinfo import parse_node_states
from goodput_agent.parsing.timefmt import ClockPolicy

REALWORLD = (Path(__file__).resolve().parents[3] / ".." / "shared" / "realworld").resolve()
CHICAGO = ClockPolicy(tz_name="America/Chicago", year=2024)  # CDT = UTC-5

# sacct -P --format=JobID,JobName,State,ExitCode,NodeList,Start,End,Elapsed,Reason
FIXTURE_SACCT_PIPE = """\
JobID|JobName|State|ExitCode|NodeList|Start|End|Elapsed|Reason
4242|pretrain|OUT_OF_MEMORY|0:125|gpu-[01-04]|2024-05-01T09:00:00|2024-05-01T10:14:31|01:14:31|None
4242.batch|batch|OUT_OF_MEMORY|0:125|gpu-01|2024-05-01T09:00:00|2024-05-01T10:14:31|01:14:31|
4242.extern|extern|COMPLETED|0:0|gpu-[01-04]|2024-05-01T09:00:00|2024-05-01T10:14:32|01:14:32|
4242.0|python|OUT_OF_MEMORY|0:125|gpu-[01-04]|2024-05-01T09:00:02|2024-05-01T10:14:30|01:14:28|
4243|finetune|NODE_FAIL|0:0|gpu-07|2024-05-01T09:30:00|2024-05-01T10:12:40|00:42:40|None
4243.batch|batch|CANCELLED|0:15|gpu-07|2024-05-01T09:30:00|2024-05-01T10:12:41|00:42:41|
4244|eval|TIMEOUT|0:0|gpu-09|2024-05-01T08:00:00|2024-05-01T12:00:05|04:00:05|None
4244.batch|batch|CANCELLED|0:15|gpu-09|2024-05-01T08:00:00|2024-05-01T12:00:07|04:00:07|
4245|sweep|CANCELLED by 1000|0:0|gpu-10|2024-05-01T08:00:00|2024-05-01T08:30:00|00:30:00|None
4246|low-pri|PREEMPTED|0:0|gpu-11|2024-05-01T08:00:00|2024-05-01T09:00:00|01:00:00|None
4247|queued|PENDING|0:0|None assigned|Unknown|Unknown|00:00:00|Priority
"""

# sacct --parsable (not parsable2): every line ends with "|"
FIXTURE_SACCT_PARSABLE = """\
JobID|State|ExitCode|NodeList|
77|FAILED|2:0|cn[3-4]|
77.0|FAILED|2:0|cn[3-4]|
garbage line without the right columns|
"""

# sacct table, as in an issue thread: ids and states cut by the column width ("+")
FIXTURE_SACCT_TABLE = """\
$ sacct -j 2681683 --format=JobID,JobName,State,ExitCode,NodeList
JobID           JobName      State ExitCode        NodeList
------------ ---------- ---------- -------- ---------------
2681683_420  entropy.sh OUT_OF_ME+    0:125          gpu-12
2681683_420+      batch OUT_OF_ME+    0:125          gpu-12
2681683_421  entropy.sh CANCELLED+      0:0          gpu-13

$ echo done
"""

FIXTURE_SCONTROL_JOBS = """\
$ scontrol show job 5001 5002
JobId=5001 JobName=train.sh
   UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A
   Priority=1 Nice=0 Account=ml QOS=normal
   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)
   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0
   RunTime=00:12:01 TimeLimit=1-00:00:00 TimeMin=N/A
   SubmitTime=2024-05-01T09:58:00 EligibleTime=2024-05-01T09:58:00
   StartTime=2024-05-01T10:00:00 EndTime=2024-05-01T10:12:01 Deadline=N/A
   Partition=gpu AllocNode:Sid=login1:4242
   NodeList=gpu-[01-02]
   BatchHost=gpu-01
   NumNodes=2 NumCPUs=128 NumTasks=16 CPUs/Task=8 ReqB:S:C:T=0:0:*:*
   TRES=cpu=128,mem=1T,node=2,billing=128,gres/gpu=16
   Command=/home/alice/train.sh
   WorkDir=/home/alice
   StdErr=/home/alice/logs/train-5001.err
   StdIn=/dev/null
   StdOut=/home/alice/logs/train-5001.out

JobId=5002 JobName=eval.sh
   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)
   Requeue=0 Restarts=2 BatchFlag=1 Reboot=0 ExitCode=0:15
   StartTime=2024-05-01T08:00:00 EndTime=2024-05-01T10:00:02 Deadline=N/A
   NodeList=gpu-03
"""

# scontrol -o show job: one job per line
FIXTURE_SCONTROL_ONELINER = (
    "JobId=6001 JobName=a UserId=bob(1002) JobState=OUT_OF_MEMORY Reason=OutOfMemory "
    "ExitCode=0:125 RunTime=00:01:00 StartTime=2024-05-01T10:00:00 "
    "EndTime=2024-05-01T10:01:00 NodeList=gpu-04 BatchHost=gpu-04\n"
    "JobId=6002 JobName=b UserId=bob(1002) JobState=COMPLETED Reason=None ExitCode=0:0 "
    "StartTime=2024-05-01T10:00:00 EndTime=2024-05-01T10:05:00 NodeList=gpu-05\n"
)

FIXTURE_SCONTROL_NODES = """\
NodeName=gpu-07 Arch=x86_64 CoresPerSocket=48
   CPUAlloc=0 CPUEfctv=192 CPUTot=192 CPULoad=0.00
   AvailableFeatures=h100
   ActiveFeatures=h100
   Gres=gpu:h100:8(S:0-1)
   NodeAddr=gpu-07 NodeHostName=gpu-07 Version=23.11.4
   OS=Linux 5.15.0-105-generic #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024
   RealMemory=2000000 AllocMem=0 FreeMem=N/A Sockets=2 Boards=1
   State=DOWN+DRAIN+NOT_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=gpu
   BootTime=2024-04-20T08:00:00 SlurmdStartTime=2024-04-20T08:01:00
   CfgTRES=cpu=192,mem=2000000M,billing=192,gres/gpu=8
   AllocTRES=
   Reason=Not responding [slurm@2024-05-01T10:12:40]

NodeName=gpu-08 Arch=x86_64 CoresPerSocket=48
   Gres=gpu:h100:8(S:0-1)
   State=IDLE+DRAIN ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=gpu
   Reason=gpu xid 79 [root@2024-05-01T11:00:00]

NodeName=gpu-09 Arch=x86_64 CoresPerSocket=48
   State=ALLOCATED ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=gpu
"""

FIXTURE_SINFO_R = """\
REASON               USER      TIMESTAMP           NODELIST
Not responding       slurm     2024-05-01T10:12:40 gpu-07
Kill task failed     root      2024-05-01T10:20:00 gpu-[10-11]
gpu xid 79           root      2024-05-01T11:00:00 gpu-08
maintenance          admin     2024-04-30T18:00:00 gpu-[20-23]
"""

FIXTURE_SINFO_R_OLD = """\
REASON                                   NODELIST
Not responding                           node[03-04]
bad dimm                                 node07
"""

# sacct --json from Slurm 21.08 (data_parser v0.0.37): strings, not lists; signal_id
FIXTURE_SACCT_JSON_0037 = {
    "meta": {"plugin": {"type": "openapi/dbv0.0.37", "name": "Slurm OpenAPI DB v0.0.37"},
             "Slurm": {"version": {"major": 21, "micro": 8, "minor": 8},
                       "release": "21.08.8"}},
    "errors": [],
    "jobs": [{
        "job_id": 9001,
        "name": "pretrain",
        "nodes": "gpu-[01-02]",
        "state": {"current": "OUT_OF_MEMORY", "reason": "None"},
        "exit_code": {"status": "SIGNALED", "return_code": 0,
                      "signal": {"signal_id": 9, "name": "KILL"}},
        "time": {"elapsed": 4471, "end": 1714558471, "start": 1714554000,
                 "submission": 1714553000, "suspended": 0, "limit": 1440},
        "steps": [{
            "step": {"job_id": 9001, "het": {"component": None}, "id": "batch",
                     "name": "batch"},
            "state": "OUT_OF_MEMORY",
            "exit_code": {"status": "SIGNALED", "return_code": 0,
                          "signal": {"signal_id": 9, "name": "KILL"}},
            "nodes": {"count": 1, "range": "gpu-01"},
            "time": {"elapsed": 4471, "end": 1714558471, "start": 1714554000},
        }],
    }],
}


def _ctx(name: str, clock: ClockPolicy | None = None) -> ParseContext:
    return ParseContext(rel_path=f"slurm/{name}", clock=clock or ClockPolicy())


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _sniffers(p: Path) -> set[str]:
    head = read_head(p).decode("utf-8", errors="replace")
    return {parser.format for parser in PARSERS if parser.sniff(head, p.name)}


def _by_job(result: ParseResult) -> dict[str, object]:
    return {e.detail["job_id"]: e for e in result.events if "job_id" in e.detail}


# ------------------------------------------------------------------------------ sacct pipe


def test_sacct_pipe_states_map_to_categories(tmp_path: Path) -> None:
    p = _write(tmp_path, "sacct.txt", FIXTURE_SACCT_PIPE)
    assert _sniffers(p) == {"sacct_pipe"}
    result = SACCT_PIPE.parse(p, _ctx("sacct.txt", CHICAGO))
    ev = _by_job(result)
    oom = ev["4242"]
    assert (oom.kind, oom.role, oom.category) == (EventKind.job_state, Role.primary, "host_oom")
    assert oom.node is None and oom.detail["nodes"] == ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]
    assert oom.ts == datetime(2024, 5, 1, 15, 14, 31, tzinfo=UTC) and oom.clock == Clock.local
    assert oom.detail["exit_code"] == 0 and oom.detail["signal"] == 125
    assert oom.detail["elapsed_s"] == 4471
    assert (oom.locator.line_start, oom.locator.line_end) == (2, 2)
    assert oom.excerpt.startswith("4242|pretrain|OUT_OF_MEMORY")
    batch = ev["4242.batch"]
    assert (batch.kind, batch.category, batch.node) == (EventKind.step_state, "host_oom", "gpu-01")
    assert ev["4242.extern"].role == Role.context
    nf = ev["4243"]
    assert (nf.kind, nf.role, nf.category, nf.node) == (
        EventKind.node_fail, Role.primary, "node_failure", "gpu-07")
    # the batch step killed because the node failed is a symptom of that failure
    assert (ev["4243.batch"].role, ev["4243.batch"].category) == (Role.symptom, "node_failure")
    to = ev["4244"]
    assert (to.kind, to.role, to.category) == (EventKind.time_limit, Role.primary, "time_limit")
    assert (ev["4244.batch"].role, ev["4244.batch"].category) == (Role.symptom, "time_limit")
    user_cancel = ev["4245"]
    assert user_cancel.role == Role.context and user_cancel.detail["cancelled_by_uid"] == 1000
    assert (ev["4246"].kind, ev["4246"].category) == (EventKind.preempted, "preempted")
    pending = ev["4247"]
    assert pending.ts is None and pending.detail["nodes"] == []
    assert pending.detail["reason"] == "Priority"
    assert {j["job_id"] for j in result.facts["jobs"]} == {
        "4242", "4243", "4244", "4245", "4246", "4247"}
    assert len(result.facts["steps"]) == 5
    assert result.lines_read == 12


def test_sacct_parsable_with_trailing_pipes(tmp_path: Path) -> None:
    p = _write(tmp_path, "sacct-p.txt", FIXTURE_SACCT_PARSABLE)
    assert _sniffers(p) == {"sacct_pipe"}
    result = SACCT_PIPE.parse(p, _ctx("sacct-p.txt"))
    ev = _by_job(result)
    assert set(ev) == {"77", "77.0"}
    job = ev["77"]
    assert (job.role, job.category, job.detail["exit_code"]) == (
        Role.primary, "application_error", 2)
    assert job.detail["weight"] == "low" and job.detail["nodes"] == ["cn3", "cn4"]
    assert result.warnings == ["1 rows with a wrong number of columns skipped"]


def test_sacct_pipe_with_any_column_subset(tmp_path: Path) -> None:
    text = "State|JobIDRaw|NNodes|AllocTRES\nFAILED|12|1|cpu=8,gres/gpu=8\n"
    p = _write(tmp_path, "s.txt", text)
    result = SACCT_PIPE.parse(p, _ctx("s.txt"))
    (ev,) = result.events
    assert ev.detail["job_id"] == "12" and ev.detail["fields"] == {
        "nnodes": "1", "alloctres": "cpu=8,gres/gpu=8"}


# ----------------------------------------------------------------------------- sacct table


def test_sacct_table_with_truncated_cells(tmp_path: Path) -> None:
    p = _write(tmp_path, "sacct-table.txt", FIXTURE_SACCT_TABLE)
    assert _sniffers(p) == {"sacct_table"}
    result = SACCT_TABLE.parse(p, _ctx("sacct-table.txt"))
    assert len(result.events) == 3
    job, step, cancelled = result.events
    assert (job.detail["state"], job.category, job.node) == ("OUT_OF_MEMORY", "host_oom", "gpu-12")
    assert job.kind == EventKind.job_state and job.locator.line_start == 4
    assert step.kind == EventKind.step_state and step.detail["id_truncated"] is True
    assert cancelled.detail["state"] == "CANCELLED" and cancelled.role == Role.context
    assert [j["job_id"] for j in result.facts["jobs"]] == ["2681683_420", "2681683_421"]


def _as_inline_code(text: str) -> str:
    """Each line wrapped in markdown's inline-code backticks, as a thread pastes a table
    (the header indented; the underline, in a real paste, left bare)."""
    return "".join(ln + "\n" if set(ln) <= set("- ") else f"`{ln}`\n"
                   for ln in text.splitlines())


@pytest.mark.parametrize(("name", "text", "parser"), [
    ("sacct-table.txt", FIXTURE_SACCT_TABLE, SACCT_TABLE),
    ("sacct.txt", FIXTURE_SACCT_PIPE, SACCT_PIPE),
])
def test_a_sacct_table_pasted_as_inline_code_reads_the_same(tmp_path: Path, name: str,
                                                            text: str, parser) -> None:
    plain = parser.parse(_write(tmp_path, name, text), _ctx(name))
    quoted = _write(tmp_path, "quoted-" + name, _as_inline_code(text))
    assert _sniffers(quoted) == {parser.format}
    got = parser.parse(quoted, _ctx(name))
    assert [(e.detail["job_id"], e.detail["state"], e.category, e.node, e.locator.line_start)
            for e in got.events] == \
        [(e.detail["job_id"], e.detail["state"], e.category, e.node, e.locator.line_start)
         for e in plain.events]
    assert got.events


# -------------------------------------------------------------------------------- scontrol


def test_scontrol_show_job_records(tmp_path: Path) -> None:
    p = _write(tmp_path, "scontrol-job.txt", FIXTURE_SCONTROL_JOBS)
    assert _sniffers(p) == {"scontrol_job"}
    result = SCONTROL_JOB.parse(p, _ctx("scontrol-job.txt", CHICAGO))
    ev = _by_job(result)
    failed = ev["5001"]
    assert (failed.role, failed.category) == (Role.primary, "application_error")
    assert failed.detail["exit_code"] == 1 and failed.detail["signal"] == 0
    assert failed.detail["reason"] == "NonZeroExitCode"
    assert failed.locator.line_start == 5 and "JobState=FAILED" in failed.excerpt
    assert failed.ts == datetime(2024, 5, 1, 15, 12, 1, tzinfo=UTC)
    assert failed.detail["record_lines"] == [2, 19]
    assert failed.detail["elapsed_s"] == 721
    timeout = ev["5002"]
    assert (timeout.kind, timeout.category, timeout.node) == (
        EventKind.time_limit, "time_limit", "gpu-03")
    facts = {j["job_id"]: j for j in result.facts["jobs"]}
    assert facts["5001"]["std_out"] == "/home/alice/logs/train-5001.out"
    assert facts["5001"]["std_err"] == "/home/alice/logs/train-5001.err"
    assert facts["5001"]["nodes"] == ["gpu-01", "gpu-02"]
    assert facts["5001"]["batch_host"] == "gpu-01" and facts["5001"]["time_limit_s"] == 86400
    assert facts["5002"]["restarts"] == 2


def test_scontrol_oneliner(tmp_path: Path) -> None:
    p = _write(tmp_path, "scontrol-o.txt", FIXTURE_SCONTROL_ONELINER)
    assert _sniffers(p) == {"scontrol_job"}
    ev = _by_job(SCONTROL_JOB.parse(p, _ctx("scontrol-o.txt")))
    assert (ev["6001"].category, ev["6001"].node, ev["6001"].locator.line_start) == (
        "host_oom", "gpu-04", 1)
    assert (ev["6002"].role, ev["6002"].locator.line_start) == (Role.context, 2)


def test_scontrol_show_node(tmp_path: Path) -> None:
    p = _write(tmp_path, "scontrol-node.txt", FIXTURE_SCONTROL_NODES)
    assert _sniffers(p) == {"scontrol_node"}
    result = SCONTROL_NODE.parse(p, _ctx("scontrol-node.txt"))
    by_node = {e.node: e for e in result.events}
    down = by_node["gpu-07"]
    assert (down.kind, down.role, down.category) == (
        EventKind.node_fail, Role.primary, "node_failure")
    assert down.ts == datetime(2024, 5, 1, 10, 12, 40, tzinfo=UTC)
    assert down.detail["reason"] == "Not responding" and down.detail["reason_user"] == "slurm"
    assert (down.locator.line_start, down.locator.line_end) == (9, 14)
    assert "State=DOWN+DRAIN+NOT_RESPONDING" in down.excerpt and "Not responding" in down.excerpt
    xid = by_node["gpu-08"]
    assert xid.role == Role.context and xid.detail["reason"] == "gpu xid 79"
    assert xid.detail["suggests"] == "gpu_hardware"
    assert "gpu-09" not in by_node  # healthy, no reason: no event
    facts = {n["name"]: n for n in result.facts["nodes"]}
    assert facts["gpu-07"]["state"] == "DOWN+DRAIN+NOT_RESPONDING"
    assert facts["gpu-09"]["state"] == "ALLOCATED"
    assert facts["gpu-08"]["reason_time"] == "2024-05-01T11:00:00+00:00"


# ----------------------------------------------------------------------------------- sinfo


def test_sinfo_reasons(tmp_path: Path) -> None:
    p = _write(tmp_path, "sinfo-R.txt", FIXTURE_SINFO_R)
    assert _sniffers(p) == {"sinfo_reasons"}
    result = SINFO_REASONS.parse(p, _ctx("sinfo-R.txt"))
    primary = sorted((e.node, e.locator.line_start) for e in result.events
                     if e.role == Role.primary)
    assert primary == [("gpu-07", 2), ("gpu-10", 3), ("gpu-11", 3)]
    assert all(e.category == "node_failure" and e.kind == EventKind.node_fail
               for e in result.events if e.role == Role.primary)
    kill = next(e for e in result.events if e.node == "gpu-10")
    assert kill.ts == datetime(2024, 5, 1, 10, 20, tzinfo=UTC)
    xid = next(e for e in result.events if e.node == "gpu-08")
    assert xid.role == Role.context and xid.detail["reason"] == "gpu xid 79"
    maint = next(e for e in result.events if e.detail.get("reason") == "maintenance")
    assert maint.role == Role.context and maint.node is None and len(maint.detail["nodes"]) == 4
    assert len(result.facts["nodes"]) == 8


def test_sinfo_reasons_old_two_column_form(tmp_path: Path) -> None:
    p = _write(tmp_path, "sinfo-R-old.txt", FIXTURE_SINFO_R_OLD)
    assert _sniffers(p) == {"sinfo_reasons"}
    result = SINFO_REASONS.parse(p, _ctx("sinfo-R-old.txt"))
    assert sorted(e.node for e in result.events if e.role == Role.primary) == [
        "node03", "node04"]
    dimm = next(e for e in result.events if e.node == "node07")
    assert dimm.role == Role.context and dimm.ts is None


# -------------------------------------------------------------------------------- JSON


def test_sacct_json_legacy_0037_shape(tmp_path: Path) -> None:
    p = _write(tmp_path, "sacct.json", json.dumps(FIXTURE_SACCT_JSON_0037, indent=2))
    assert _sniffers(p) == {"sacct_json"}
    result = SACCT_JSON.parse(p, _ctx("sacct.json"))
    ev = _by_job(result)
    job = ev["9001"]
    assert (job.role, job.category) == (Role.primary, "host_oom")
    assert job.ts == datetime(2024, 5, 1, 10, 14, 31, tzinfo=UTC) and job.clock == Clock.absolute
    assert job.detail["signal"] == 9 and job.detail["time_limit_s"] == 1440 * 60
    lines = p.read_text().splitlines()
    assert '"state"' in lines[job.locator.line_start - 1]
    step = ev["9001.batch"]
    assert (step.kind, step.node, step.category) == (EventKind.step_state, "gpu-01", "host_oom")


def _realworld(*parts: str) -> Path:
    p = REALWORLD.joinpath(*parts)
    if not p.exists():
        pytest.skip("../shared/realworld is not present (it is in CI)")
    return p


def test_realworld_slurmdb_failed_job() -> None:
    p = _realworld("slurm-json", "slurmdb-job-failed.json")
    assert _sniffers(p) == {"sacct_json"}
    ev = _by_job(SACCT_JSON.parse(p, _ctx(p.name)))
    job = ev["5966"]
    assert job.detail["state"] == "FAILED" and job.detail["exit_code"] == 1
    assert (job.role, job.category, job.node) == (Role.primary, "application_error", "cn1")
    assert job.ts == datetime.fromtimestamp(1747751522, UTC)
    assert ev["5966.batch"].detail["exit_code"] == 1


def test_realworld_slurmdb_timeout_job() -> None:
    p = _realworld("slurm-json", "slurmdb-job-timeout.json")
    result = SACCT_JSON.parse(p, _ctx(p.name))
    ev = _by_job(result)
    assert (ev["5964"].kind, ev["5964"].category) == (EventKind.time_limit, "time_limit")
    assert (ev["5964.batch"].role, ev["5964.batch"].category) == (Role.symptom, "time_limit")
    assert result.facts["jobs"][0]["time_limit_s"] == 60


def test_realworld_slurmrestd_job_lists() -> None:
    p = _realworld("slurm-json", "slurm-job-timeout.json")
    (ev,) = SACCT_JSON.parse(p, _ctx(p.name)).events
    assert ev.category == "time_limit" and ev.detail["signal"] == 15
    assert ev.detail["reason"] == "TimeLimit"
    facts = SACCT_JSON.parse(_realworld("slurm-json", "slurm-job-failed.json"),
                             _ctx("f.json")).facts["jobs"][0]
    assert facts["std_out"] == "/home/ksoto/slurm-5966.out" and facts["exit_code"] == 1


def test_realworld_slurmrestd_node_down() -> None:
    p = _realworld("slurm-json", "slurm-node-down.json")
    assert _sniffers(p) == {"slurm_nodes_json"}
    result = SLURM_NODES_JSON.parse(p, _ctx(p.name))
    (ev,) = result.events
    assert (ev.node, ev.role, ev.category) == ("cn2", Role.primary, "node_failure")
    assert ev.detail["reason"] == "CPU dead" and ev.detail["reason_user"] == "root"
    assert ev.ts == datetime.fromtimestamp(1747753681, UTC)
    assert result.facts["nodes"] == [{"name": "cn2", "state": "DOWN", "reason": "CPU dead",
                                      "reason_time": ev.ts.isoformat()}]


def test_realworld_slurmrestd_nodes_mixed_states() -> None:
    p = _realworld("slurm-json", "slurm-nodes.json")
    result = SLURM_NODES_JSON.parse(p, _ctx(p.name))
    roles = {e.node: e.role for e in result.events}
    assert roles == {"cn1": Role.primary, "cn4": Role.context}  # DOWN; IDLE+DRAIN
    assert len(result.facts["nodes"]) == 6


def test_realworld_soperator_table_shows_jobs_20_and_21_failed() -> None:
    p = _realworld("D_slurm", "soperator321_sacct_table_failed_steps.log")
    result = SACCT_TABLE.parse(p, _ctx(p.name))
    states = {j["job_id"]: j["state"] for j in result.facts["jobs"]}
    assert states == {"20": "FAILED", "21": "FAILED", "22": "COMPLETED"}
    failed = [e.detail["job_id"] for e in result.events if e.detail["state"] == "FAILED"]
    assert failed == ["20", "20.0", "21", "21.0"]


def test_realworld_scontrol_job_with_junk_before() -> None:
    p = _realworld("D_slurm", "mknoxnv5_scontrol_show_job_failed_nonzero.log")
    assert _sniffers(p) == {"scontrol_job"}
    result = SCONTROL_JOB.parse(p, _ctx(p.name))
    (job,) = result.facts["jobs"]
    assert (job["state"], job["exit_code"], job["reason"], job["batch_host"]) == (
        "FAILED", 1, "NonZeroExitCode", "asus")


def test_realworld_sinfo_tables() -> None:
    arjuna = _realworld("D_slurm", "arjuna69_sinfo_drng_fail_maint_gpu_partition.log")
    assert _sniffers(arjuna) == {"sinfo"}
    result = SINFO.parse(arjuna, _ctx(arjuna.name))
    assert sorted(e.node for e in result.events if e.role == Role.primary) == [
        "c020", "c021", "c022", "f005"]
    azhop = _realworld("D_slurm", "azhop1210_sinfo_R_cyclecloud_node_fail_squeue_configuring.log")
    assert _sniffers(azhop) == {"sinfo_reasons"}
    result = SINFO_REASONS.parse(azhop, _ctx(azhop.name))
    assert [e.node for e in result.events] == ["viz3d-1", "viz3d-2", "viz3d-3", "viz3d-4"]
    assert result.events[0].detail["reason"] == "cyclecloud_node_fail"


def test_every_realworld_file_survives_every_sniffer_and_parser() -> None:
    if not REALWORLD.is_dir():
        pytest.skip("../shared/realworld is not present (it is in CI)")
    for f in sorted(x for x in REALWORLD.rglob("*") if x.is_file()):
        head = read_head(f).decode("utf-8", errors="replace")
        for parser in PARSERS:
            if parser.sniff(head, f.name):
                result = parser.parse(f, _ctx(f.name))
                assert result.format == parser.format
                for ev in result.events:
                    assert 1 <= ev.locator.line_start <= ev.locator.line_end
                    assert len(ev.excerpt) <= 500


# ------------------------------------------------------------------------- errors, sniffing


def test_truncated_sniffed_json_raises_one_line_parse_error(tmp_path: Path) -> None:
    text = json.dumps(FIXTURE_SACCT_JSON_0037, indent=2)
    p = _write(tmp_path, "cut.json", text[: len(text) * 2 // 3])
    assert SACCT_JSON.sniff(p.read_text(), p.name)
    with pytest.raises(ParseError) as err:
        SACCT_JSON.parse(p, _ctx(p.name))
    assert "\n" not in str(err.value) and "not valid JSON" in str(err.value)


def test_json_without_jobs_or_nodes_raises(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.json", '{"jobs": "none", "job_id": 1}')
    with pytest.raises(ParseError):
        SACCT_JSON.parse(p, _ctx(p.name))


def test_text_parsers_on_garbage_raise_parse_error_or_return_nothing(tmp_path: Path) -> None:
    p = _write(tmp_path, "junk.txt", "\x00\x01 random | words\nmore = junk\n")
    for parser in (SACCT_PIPE, SINFO_REASONS, SINFO):
        with pytest.raises(ParseError):
            parser.parse(p, _ctx(p.name))
    for parser in (SCONTROL_JOB, SCONTROL_NODE, SACCT_TABLE):
        assert parser.parse(p, _ctx(p.name)).events == []


@pytest.mark.parametrize("head", [
    "", "{}", '{"items": [], "apiVersion": "v1", "kind": "List"}',
    "[2024-05-01T10:00:00.123] _job_complete: JobId=5 WEXITSTATUS 1\n",
    "NAME     STATUS     ROLES    AGE   VERSION\np100     NotReady   <none>   17h   v1.15.11\n",
    "Traceback (most recent call last):\n  File \"x.py\", line 1\n",
])
def test_sniffers_reject_other_formats(head: str) -> None:
    assert [p.format for p in PARSERS if p.sniff(head, "x.log")] == []


# --------------------------------------------------------------------------------- values


def test_value_helpers() -> None:
    assert normalize_state("CANCELLED by 0") == ("CANCELLED", 0)
    assert normalize_state("OUT_OF_ME+") == ("OUT_OF_MEMORY", None)
    assert normalize_state("CANCELLED+") == ("CANCELLED", None)
    assert parse_exit_code("0:15") == (0, 15)
    assert parse_exit_code("") == (None, None)
    assert parse_duration("1-02:03:04") == 93784
    assert parse_duration("1-02:03") == 93780
    assert parse_duration("00:00.004") == pytest.approx(0.004)
    assert parse_duration("UNLIMITED") is None
    assert parse_node_states("drng@") == ["DRAINING", "REBOOT_REQUESTED"]
    assert parse_node_states("down*") == ["DOWN", "NOT_RESPONDING"]
    assert parse_node_states("IDLE+DRAIN") == ["IDLE", "DRAIN"]


def test_node_classification() -> None:
    gpu_down = outcomes.classify_node(["DOWN", "DRAIN"], "GPU fell off the bus")
    assert (gpu_down.role, gpu_down.category) == (Role.primary, "gpu_hardware")
    assert outcomes.classify_node(["IDLE", "DRAIN"], "Xid 79 on GPU 3").role == Role.context
    assert outcomes.classify_node(["DOWN"], "scheduled maintenance").role == Role.context
    assert outcomes.classify_node(["MIXED", "DRAIN"], "Kill task failed").category == "node_failure"
    assert outcomes.classify_node(["IDLE"], None).role == Role.context


def test_cancelled_by_root_is_a_symptom() -> None:
    outcome = outcomes.classify_job_state("CANCELLED", 0, None)
    assert outcome.role == Role.symptom


def test_a_job_log_that_echoes_scontrol_or_sinfo_is_left_to_the_job_log_parser() -> None:
    traceback_log = FIXTURE_SCONTROL_JOBS + (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "train.py", line 88, in <module>\n'
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert [p.format for p in PARSERS if p.sniff(traceback_log, "slurm-5001.out")] == []
    training = "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\ngpu up infinite 2 alloc gpu-[1-2]\n"
    training += "".join(f"step {i} loss {1 / (i + 1):.4f} lr 3e-4\n" for i in range(200))
    assert [p.format for p in PARSERS if p.sniff(training, "slurm-77.out")] == []
