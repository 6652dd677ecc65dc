import pytest

from goodput_agent.analysis.slowdown.trace_ranks import MIN_OTHERS_WAIT_SHARE, collective_waits
from goodput_agent.analysis.slowdown.trace_steps import rank_breakdown
from goodput_agent.parsing.kineto.model import Step
from tests.analysis.slowdown.trace_builders import ELEMENTWISE, RunPlan, TraceBuilder, ddp_run


def test_a_straggler_behind_a_ddp_barrier_shows_in_the_others_waits():
    traces = ddp_run(RunPlan(ranks=4, steps=6, slow={2: 1.5}))
    steps = [t.steps[0].dur for t in traces]
    assert max(steps) - min(steps) < 1e-6 * min(steps)  # the barrier evens out step totals
    run = collective_waits(traces)
    s = run.straggler
    assert s is not None and (s.rank, s.host, s.path) == (2, "node-0", traces[2].meta.path)
    assert s.consistency == 1.0 and s.steps == 6 and run.aligned_by == "number"
    assert s.own_wait_share < 0.01 and s.others_wait_share >= MIN_OTHERS_WAIT_SHARE
    assert s.busy_us > 1.3 * s.others_busy_us
    extra = 20 * 1000 * 0.5  # 20 kernels of 1 ms, half again as long on rank 2
    for rw in run.ranks:
        expected = 0.0 if rw.rank == 2 else extra
        assert rw.exposed[3] == pytest.approx(expected, rel=0.1, abs=300)


def test_uniformly_slower_communication_has_no_straggler():
    healthy, slow = collective_waits(ddp_run(seed=1)), collective_waits(
        ddp_run(seed=1, allreduce_us=10000))
    assert healthy.straggler is None and slow.straggler is None
    assert slow.transfer_share > 0.25 > 0.15 > healthy.transfer_share
    assert slow.wait_share < 0.05


def test_a_barely_slower_rank_is_not_a_straggler():
    assert collective_waits(ddp_run(slow={1: 1.03})).straggler is None


def test_steps_numbered_differently_are_aligned_by_order():
    traces = ddp_run(RunPlan(ranks=3, steps=5, slow={0: 1.6}))
    traces[1].steps = [Step(number=s.number + 100, ts=s.ts, dur=s.dur) for s in traces[1].steps]
    run = collective_waits(traces)
    assert run.aligned_by == "order" and run.aligned_steps == 5
    assert run.straggler is not None and run.straggler.rank == 0
    assert set(run.waits_of(traces[1].meta.path)) == {100, 101, 102, 103, 104}


def test_kernel_pattern_steps_are_aligned_too():
    run = collective_waits(ddp_run(RunPlan(ranks=4, steps=6, slow={3: 1.5},
                                           profiler_steps=False)))
    assert run.aligned_by == "order" and run.straggler is not None and run.straggler.rank == 3


def test_waiting_hidden_under_compute_is_not_exposed():
    ranks = []
    for r, (coll_at, coll_dur) in enumerate(((100, 500), (500, 100))):
        b = TraceBuilder(f"rank{r}.json", rank=r)
        b.step(0, 0, 1000)
        b.kernel(0, 400 if r == 0 else 500, name=ELEMENTWISE)
        b.nccl(coll_at, coll_dur)  # both end at 600; rank 0 arrived at 100, rank 1 at 500
        b.kernel(650, 300)
        ranks.append(b.build())
    run = collective_waits(ranks)
    w0, w1 = run.ranks
    assert (w0.waits[0], w1.waits[0]) == (400, 0) and w0.transfer[0] == 100
    assert w0.exposed[0] == pytest.approx(100)  # 100-500 waiting, 100-400 under compute
    b = rank_breakdown(ranks[0], w0.exposed).steps[0]
    assert b.comm_wait_us == pytest.approx(100) and b.comm_transfer_us == pytest.approx(100)


def test_one_rank_has_nothing_to_wait_for():
    run = collective_waits(ddp_run(ranks=1))
    assert run.aligned_by is None and run.straggler is None and run.ranks[0].exposed == {}
