"""The stall detector against made-up progress histories: each rule of the module's docstring
has a case that passes it and a case that fails it."""

from __future__ import annotations

import numpy as np

from goodput_agent.analysis.live.stall import Phase, StallSettings, judge_stall


def steps(n: int, dt: float = 1.0, start: float = 1000.0, jitter: float = 0.0) -> list[float]:
    rng = np.random.default_rng(1)
    return list(start + np.cumsum(dt * (1 + jitter * rng.standard_normal(n)).clip(0.5)))


def test_a_job_that_keeps_stepping_is_progressing() -> None:
    marks = steps(100, jitter=0.1)
    v = judge_stall(marks, now=marks[-1] + 2)
    assert v.state == "progressing" and not v.stalled and v.step_p50_s is not None


def test_silence_past_the_allowance_is_a_stall_and_the_floor_holds() -> None:
    marks = steps(100)
    assert judge_stall(marks, now=marks[-1] + 29).state == "progressing"  # under the floor
    v = judge_stall(marks, now=marks[-1] + 31)
    assert v.stalled and v.allowed_s == 30.0 and "no progress for 31 s" in v.reason


def test_slow_steps_raise_the_allowance_to_their_p99() -> None:
    marks = steps(100, dt=40.0, jitter=0.05)
    v = judge_stall(marks, now=marks[-1] + 90)
    assert not v.stalled and v.allowed_s > 90  # 2.5 x p99 of 40 s steps
    assert judge_stall(marks, now=marks[-1] + 200).stalled


def test_start_up_never_alarms() -> None:
    assert judge_stall([], now=5000).state == "starting"
    marks = steps(3)
    v = judge_stall(marks, now=marks[-1] + 3600)
    assert v.state == "starting" and not v.stalled


def test_an_announced_checkpoint_gets_the_room_its_earlier_saves_took() -> None:
    marks = steps(50)
    saves = [Phase(kind="checkpoint", start=marks[19] + 0.5, end=marks[19] + 200)]
    marks = marks[:20] + [m + 200 for m in marks[20:]]
    now_phase = Phase(kind="checkpoint", start=marks[-1] + 0.5)
    v = judge_stall(marks, now=marks[-1] + 250, phases=[*saves, now_phase])
    assert v.state == "in_phase" and v.allowed_s > 299  # 1.5 x the 199.5 s save
    assert judge_stall(marks, now=marks[-1] + 400, phases=[*saves, now_phase]).stalled
    # the same silence without the announcement is a stall
    assert judge_stall(marks, now=marks[-1] + 250, phases=saves).stalled


def test_the_first_announced_phase_is_given_room_and_says_so() -> None:
    marks = steps(50)
    v = judge_stall(marks, now=marks[-1] + 600,
                    phases=[Phase(kind="eval", start=marks[-1] + 1)])
    assert v.state == "in_phase" and any("first eval phase" in n for n in v.notes)


def test_recurring_unannounced_pauses_are_learned() -> None:
    marks: list[float] = []
    t = 0.0
    for i in range(1, 301):
        t += 1.0 + (120.0 if i % 100 == 0 else 0.0)  # a 2-minute pause every 100 steps
        marks.append(t)
    # 300 marks: the third pause is due now (100 steps since the last)
    marks = marks[:-1]
    v = judge_stall(marks, now=marks[-1] + 100)
    assert not v.stalled and any("unannounced pauses" in n for n in v.notes)
    assert judge_stall(marks, now=marks[-1] + 200).stalled  # past 1.5 x the longest
    # halfway between pauses, the same silence is a stall
    early = marks[:250]
    assert judge_stall(early, now=early[-1] + 100).stalled


def test_a_metric_series_with_a_gap_is_no_data_not_a_stall() -> None:
    samples = list(np.arange(0, 600, 15.0))
    marks = samples[:30]  # the counter rose at each of these samples
    v = judge_stall(marks, now=900, samples=samples[:30], steps=list(range(30)))
    assert v.state == "no_data" and "missing data" in v.reason
    # samples present and flat: a stall
    flat = judge_stall(marks, now=samples[-1], samples=samples, steps=list(range(30)))
    assert flat.stalled
    assert judge_stall(marks, now=900, samples=[]).state == "no_data"


def test_settings_are_the_judges() -> None:
    marks = steps(100)
    assert judge_stall(marks, now=marks[-1] + 5,
                       settings=StallSettings(min_stall_s=2.0)).stalled
