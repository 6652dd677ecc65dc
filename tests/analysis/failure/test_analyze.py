"""The ordering rules of the failure analysis, on hand-built Event fixtures."""

from datetime import UTC, datetime, timedelta

from goodput_agent.analysis.abstention import UNEXPLAINED
from goodput_agent.analysis.failure.analyze import diagnose
from goodput_agent.analysis.failure.observations import Activity, Observations
from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.core.incident import IncidentSpec, Window

T0 = datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)


def ev(kind, role, category=None, *, t=0.0, node=None, rank=None, path="f.log", line=1,
       clock=Clock.absolute, **detail) -> Event:
    return Event(kind=kind, role=role, category=category,
                 ts=None if t is None else T0 + timedelta(seconds=t), clock=clock, node=node,
                 rank=rank, summary=f"{kind.value} {detail}", excerpt="x",
                 locator=Locator(path=path, line_start=line, line_end=line), detail=detail)


def timeouts(ranks, t, seq=100, host_of=lambda r: f"n{r // 8}"):
    return [ev(EventKind.nccl_watchdog_timeout, Role.symptom, t=t + r * 0.01, rank=r,
               node=host_of(r), path=f"logs/rank{r}.log", seq_num=seq) for r in ranks]


def test_first_hardware_fault_beats_later_loud_network_symptoms() -> None:
    events = [
        *timeouts(range(32), t=600),
        ev(EventKind.ib_error, Role.primary, "network_fault", t=5, node="n0", rank=2,
           path="logs/rank2.log", line=40, peer="10.0.0.3"),
        ev(EventKind.xid, Role.primary, "gpu_hardware", t=0, node="n3", path="nodes/n3/kern.log",
           xid=79, pid=4242),
        ev(EventKind.cuda_error, Role.primary, "application_error", t=0.8, node="n3", rank=29,
           path="logs/rank29.log"),
    ]
    v = diagnose(Observations(events=events, rank_hosts={r: f"n{r // 8}" for r in range(32)},
                              kernel_log_nodes={"n3"}))
    assert (v.category, v.node, v.rank) == ("gpu_hardware", "n3", 29)
    cats = {a.category for a in v.alternatives}
    assert "network_fault" in cats and "application_error" in cats
    assert v.confidence >= 0.75


def test_within_skew_tolerance_the_more_decisive_event_wins() -> None:
    events = [ev(EventKind.python_exception, Role.primary, "application_error", t=0, rank=1,
                 node="a"),
              ev(EventKind.host_oom_kill, Role.primary, "host_oom", t=1.5, node="b")]
    v = diagnose(Observations(events=events))
    assert v.category == "host_oom" and v.node == "b"
    events[1] = events[1].model_copy(update={"ts": T0 + timedelta(seconds=30)})
    v = diagnose(Observations(events=events))
    assert v.category == "application_error" and v.rank == 1


def test_events_outside_the_window_are_ignored() -> None:
    old = ev(EventKind.xid, Role.primary, "gpu_hardware", t=-86400, node="n9", xid=48)
    oom = ev(EventKind.cuda_oom, Role.primary, "gpu_oom", t=120, rank=4, node="n0")
    spec = IncidentSpec(window=Window(start=T0, end=T0 + timedelta(hours=1)))
    v = diagnose(Observations(events=[old, oom], incident=spec))
    assert v.category == "gpu_oom" and v.rank == 4
    assert any("outside" in n for n in v.clock_notes)


def test_lost_node_is_dated_by_its_last_sign_of_life_not_the_reason_time() -> None:
    # slurmctld marks the node down 5 minutes after it went silent; peers' IB errors came
    # in between: the node loss is still first.
    events = [
        ev(EventKind.node_fail, Role.primary, "node_failure", t=400, node="n2",
           path="slurm/sinfo_R.txt"),
        ev(EventKind.ib_error, Role.primary, "network_fault", t=90, node="n0", rank=1,
           path="logs/rank1.log"),
    ]
    activity = [Activity(path="nodes/n2/kern.log", node="n2", rank=None, first=T0,
                         last=T0 + timedelta(seconds=60))]
    v = diagnose(Observations(events=events, activity=activity))
    assert v.category == "node_failure" and v.node == "n2"
    assert "stop" in v.summary


def test_hang_rank_behind_in_collective_sequence() -> None:
    events = timeouts([r for r in range(16) if r != 5], t=1800, seq=812)
    events += timeouts([5], t=1800, seq=811)
    v = diagnose(Observations(events=events, rank_hosts={r: f"n{r // 8}" for r in range(16)}))
    assert (v.category, v.rank, v.node) == ("hang", 5, "n0")


def test_hang_rank_that_printed_no_watchdog_line() -> None:
    events = timeouts([r for r in range(8) if r != 6], t=600, seq=None)
    elastic = ev(EventKind.elastic_failure, Role.symptom, t=700, rank=0, node="n0", root_rank=0)
    v = diagnose(Observations(events=events + [elastic],
                              rank_hosts={r: "n0" for r in range(8)}))
    assert v.category == "hang" and v.rank == 6
    assert any(a.rank == 0 and "torchelastic" in a.why_not for a in v.alternatives)


def test_no_failure_evidence_is_unknown_with_the_reason() -> None:
    state = ev(EventKind.job_state, Role.symptom, t=0, path="slurm/sacct.txt", state="FAILED")
    v = diagnose(Observations(events=[state]))
    # something failed and what started it was not read: the `unknown` is unlikely to be right
    assert v.category == "unknown" and v.confidence == UNEXPLAINED
    assert v.unknowns


def test_unplaced_hardware_event_on_the_same_node_tells_the_story() -> None:
    raw = ev(EventKind.xid, Role.primary, "gpu_hardware", t=None, node="n1", clock=Clock.none,
             xid=79)
    app = ev(EventKind.cuda_error, Role.primary, "application_error", t=10, node="n1", rank=9)
    v = diagnose(Observations(events=[raw, app]))
    assert v.category == "gpu_hardware" and v.node == "n1"


def test_link_fault_is_located_at_the_port_not_at_the_reporter() -> None:
    reporter = ev(EventKind.ib_error, Role.primary, "network_fault", t=0, node="a", rank=1,
                  peer="10.0.0.2")
    port = ev(EventKind.ib_error, Role.primary, "network_fault", t=None, node="b", rank=9,
              clock=Clock.none)
    v = diagnose(Observations(events=[reporter, port]))
    assert v.category == "network_fault" and v.node == "b"


def test_peer_named_by_many_reporters_is_the_culprit() -> None:
    events = [ev(EventKind.ib_error, Role.primary, "network_fault", t=i, node=f"n{i}", rank=i,
                 peer="10.0.0.7<4242>", path=f"logs/rank{i}.log") for i in range(4)]
    obs = Observations(events=events, facts={"f": {"host_ips": {"n7": ["10.0.0.7"]}}})
    v = diagnose(obs)
    assert (v.category, v.node) == ("network_fault", "n7")


def test_peers_of_a_lost_node_report_ib_errors_it_caused() -> None:
    events = [ev(EventKind.ib_error, Role.primary, "network_fault", t=i, node=f"n{i}", rank=i,
                 peer="10.0.0.7", path=f"logs/rank{i}.log") for i in range(3)]
    events.append(ev(EventKind.node_not_ready, Role.primary, "node_failure", t=300, node="n7"))
    obs = Observations(events=events, facts={"f": {"host_ips": {"n7": ["10.0.0.7"]}}})
    v = diagnose(obs)
    assert (v.category, v.node) == ("node_failure", "n7")


def test_weak_cuda_error_on_a_gpu_with_an_xid_is_that_xid() -> None:
    app = ev(EventKind.cuda_error, Role.primary, "application_error", t=0, node="n1", rank=3,
             clock=Clock.carried, confidence="low")
    app = app.model_copy(update={"gpu": "0000:2a:00"})
    xid = ev(EventKind.xid, Role.primary, "gpu_hardware", t=60, node="n1", xid=74)
    xid = xid.model_copy(update={"gpu": "0000:2a:00"})
    v = diagnose(Observations(events=[app, xid]))
    assert (v.category, v.node, v.rank) == ("gpu_hardware", "n1", 3)


def test_exit_status_alone_is_a_weak_verdict() -> None:
    state = ev(EventKind.job_state, Role.primary, "application_error", t=0,
               path="slurm/sacct.txt", weight="low", state="FAILED")
    v = diagnose(Observations(events=[state]))
    assert v.category == "application_error" and v.confidence <= 0.35
    assert any("exit status" in u for u in v.unknowns)


def test_carried_time_is_a_lower_bound_not_a_first_place() -> None:
    # the traceback inherited the last training line's time, two minutes before the Xid
    app = ev(EventKind.cuda_error, Role.primary, "application_error", t=0, rank=17,
             clock=Clock.carried, confidence="low")
    xid = ev(EventKind.xid, Role.primary, "gpu_hardware", t=120, node="a03", xid=79)
    v = diagnose(Observations(events=[app, xid]))
    assert (v.category, v.node, v.rank) == ("gpu_hardware", "a03", 17)


def test_scheduler_spelling_of_a_node_wins_over_an_fqdn() -> None:
    oom = ev(EventKind.host_oom_kill, Role.primary, "host_oom", t=0,
             node="gpu-b02.hpc.example.org")
    v = diagnose(Observations(events=[oom], job_nodes=["gpu-b02"],
                              rank_hosts={11: "gpu-b02.hpc.example.org"}))
    assert v.node == "gpu-b02"


def test_a_rank_whose_output_is_not_in_the_bundle_is_not_blamed_for_its_silence() -> None:
    # 15 of 16 ranks timed out; rank 11 printed nothing the bundle holds and the world size is
    # not known: its silence is no evidence (issue 24), the unaccounted ranks are named
    events = timeouts([r for r in range(16) if r != 11], t=600, seq=1580)
    v = diagnose(Observations(events=events))
    assert (v.category, v.rank) == ("hang", None) and v.confidence <= 0.5
    assert any("ranks 11" in u and "not in the bundle" in u for u in v.unknowns)


def test_a_silent_rank_is_named_when_the_bundle_shows_its_output_and_the_world() -> None:
    events = timeouts([r for r in range(16) if r != 11], t=600, seq=1580)
    alive = ev(EventKind.other, Role.context, t=500, rank=11, node="n1", path="logs/rank11.log")
    v = diagnose(Observations(events=[*events, alive],
                              facts={"logs/rank0.log": {"world_size": 16}}))
    assert (v.category, v.rank) == ("hang", 11) and v.confidence > 0.5


def test_a_failure_after_the_stall_began_did_not_cause_it() -> None:
    # every rank's watchdog fired at t=600 after 600 s: the collectives stalled at t=0.
    # A host OOM at t=620 came after; the unplaced CUDA OOM is the better story.
    events = [ev(EventKind.nccl_watchdog_timeout, Role.symptom, t=600, rank=r, node="a",
                 path=f"logs/rank{r}.log", seq_num=9, ran_ms=600016) for r in range(1, 8)]
    events.append(ev(EventKind.host_oom_kill, Role.primary, "host_oom", t=620, node="b"))
    events.append(ev(EventKind.cuda_oom, Role.primary, "gpu_oom", t=None, clock=Clock.none,
                     rank=0, node="a"))
    v = diagnose(Observations(events=events))
    assert (v.category, v.rank) == ("gpu_oom", 0)
    assert any("stalled since" in u for u in v.unknowns)


def test_a_job_that_completed_has_no_failure_to_explain() -> None:
    done = ev(EventKind.job_state, Role.context, t=900, path="slurm/sacct.txt", job_id="5",
              state="COMPLETED", exit_code=0, start="2024-05-01T10:00:00")
    scary = ev(EventKind.cuda_oom, Role.primary, "gpu_oom", t=100, rank=0, node="a")
    v = diagnose(Observations(events=[done, scary], job_id="5"))
    assert v.category == "unknown"
    assert any("COMPLETED" in u for u in v.unknowns)


def test_a_cause_long_before_the_jobs_end_with_no_sign_of_work_after_it_is_kept_but_doubted(
) -> None:
    # the rank died two hours before the scheduler ended the job and nothing logged since: it
    # may have hung the job, so it stays the verdict, but nothing ties it to the end
    from goodput_agent.analysis.failure.observations import Activity as A  # noqa: N814

    crash = ev(EventKind.python_exception, Role.primary, "application_error", t=0, rank=3,
               node="n0", path="logs/rank3.log")
    end = ev(EventKind.job_state, Role.primary, "application_error", t=7200,
             path="slurm/sacct.txt", state="FAILED", step=False, weight="low",
             start=T0.isoformat(), end=(T0 + timedelta(hours=2)).isoformat())
    quiet = [A(path="logs/rank3.log", node="n0", rank=3, first=T0 - timedelta(hours=1),
               last=T0, format="job_log")]
    v = diagnose(Observations(events=[crash, end], activity=quiet, rank_hosts={3: "n0"}))
    assert (v.category, v.rank) == ("application_error", 3)
    assert v.confidence < 0.5
    # the same crash followed by training progress is a pre-existing condition
    went_on = quiet + [A(path="logs/rank0.log", node="n0", rank=0, first=T0,
                         last=T0 + timedelta(hours=2), format="job_log",
                         last_progress=T0 + timedelta(minutes=90), last_step=4000)]
    v = diagnose(Observations(events=[crash, end], activity=went_on, rank_hosts={3: "n0"}))
    assert (v.category, v.rank) == ("unknown", None)  # only FAILED is left: no verdict
    assert any("pre-existing" in a.why_not and a.rank == 3 for a in v.alternatives)


def _one_node_silent(error_at: float | None) -> list[Event]:
    """Ranks 0-7 on n0 wait in a collective; ranks 8-15 on n1 printed no watchdog line but an
    NCCL error of their own ("unhandled system error") at `error_at` (None: untimed)."""
    events = timeouts(range(8), t=1200, seq=None)
    return events + [ev(EventKind.nccl_error, Role.symptom, "network_fault", t=error_at, rank=r,
                        node="n1", path=f"logs/rank{r}.log", nccl_code="ncclSystemError",
                        clock=Clock.absolute if error_at is not None else Clock.none)
                     for r in range(8, 16)]


def test_the_silent_ranks_own_error_before_the_others_waited_is_the_cause() -> None:
    hosts = {r: f"n{r // 8}" for r in range(16)}
    v = diagnose(Observations(events=_one_node_silent(error_at=600), rank_hosts=hosts))
    assert (v.category, v.node, v.rank) == ("network_fault", "n1", None)
    assert v.confidence < 0.7  # the error code alone does not say which system call failed
    assert any(a.category == "hang" for a in v.alternatives)


def test_the_silent_ranks_untimed_own_error_is_the_cause_at_lower_confidence() -> None:
    """Taking the times off the silent ranks' own error lines never turns their failure into
    "no rank failed on its own": the verdict keeps their class and node, lower, and says the
    order is inferred."""
    hosts = {r: f"n{r // 8}" for r in range(16)}
    timed = diagnose(Observations(events=_one_node_silent(error_at=600), rank_hosts=hosts))
    untimed = diagnose(Observations(events=_one_node_silent(error_at=None), rank_hosts=hosts))
    assert (untimed.category, untimed.node) == (timed.category, timed.node)
    assert untimed.confidence < timed.confidence and untimed.confidence <= 0.5
    assert any("carries no time" in u for u in untimed.unknowns)


def test_an_error_the_silent_ranks_printed_after_the_others_waited_leaves_a_hang() -> None:
    hosts = {r: f"n{r // 8}" for r in range(16)}
    v = diagnose(Observations(events=_one_node_silent(error_at=1300), rank_hosts=hosts))
    assert (v.category, v.node) == ("hang", "n1")


def test_stuck_watchdogs_without_a_timeout_are_a_hang_with_no_rank_singled_out() -> None:
    stuck = [ev(EventKind.nccl_watchdog_timeout, Role.symptom, t=900 + r, rank=r, node="n0",
                path=f"logs/rank{r}.log", heartbeat=True, stuck_s=600) for r in range(3)]
    v = diagnose(Observations(events=stuck, rank_hosts={r: "n0" for r in range(3)}))
    assert (v.category, v.rank) == ("hang", None) and v.confidence <= 0.5
    assert any("could not be singled out" in u for u in v.unknowns)


def test_a_verdict_resting_on_an_exception_line_without_its_traceback_stays_below_half() -> None:
    exc = ev(EventKind.python_exception, Role.primary, "application_error", t=10, rank=0,
             node="n0", without_traceback=True, weight=0.3, exc_type="ValueError")
    v = diagnose(Observations(events=[exc]))
    assert v.category == "application_error" and v.confidence < 0.5
    assert any("without its traceback" in u for u in v.unknowns)


def test_a_bundle_of_symptoms_alone_is_unknown_and_says_it_holds_only_symptoms() -> None:
    waiting = ev(EventKind.python_exception, Role.symptom, None, t=5, rank=1,
                 exc_type="torch.distributed.DistStoreError")
    v = diagnose(Observations(events=[waiting]))
    assert (v.category, v.confidence) == ("unknown", UNEXPLAINED)
    assert "only symptoms (1" in v.summary and v.evidence == [waiting]


def test_a_node_state_with_nothing_tying_the_node_to_the_job_stays_below_half() -> None:
    down = [ev(EventKind.node_fail, Role.primary, "node_failure", t=10 + i, node=n,
               path="slurm/sinfo_R.txt", line=2 + i, node_record=True, state="DOWN")
            for i, n in enumerate(("c020", "c021"))]
    v = diagnose(Observations(events=down))
    assert v.category == "node_failure" and v.confidence < 0.5
    assert any("which nodes the job ran on" in u and "c021" in u for u in v.unknowns)
    tied = diagnose(Observations(events=down, job_nodes=["c020", "c022"]))
    assert tied.node == "c020" and tied.confidence > 0.5
