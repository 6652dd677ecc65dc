"""How sure a failure verdict is: built from corroboration, never from silence.

A verdict starts from its decisive line: the class's base confidence scaled by the line's own
weight (how many classes print those words). Each independent source that agrees with it
raises it by CORROBORATION_STEP, at most MAX_CORROBORATIONS times:
- another file records the same class with a line that is not itself ambiguous (a node's
  kernel log, a second tool, the scheduler's or kubelet's record, another rank's own error):
  a second process or tool saw the same fault. A repeat of the same ambiguous words elsewhere
  is no second opinion, so it does not count;
- the scheduler's own reason for ending the job (OUT_OF_MEMORY, NODE_FAIL, TIMEOUT,
  PREEMPTED) names the same class, when the verdict does not already rest on it;
- timing order: the peers' symptoms (their watchdog timeouts, resets, the launcher's
  teardown) began after the verdict's event and close enough to it to be the cascade it
  started. Other processes' clocks agree that it came first; this corroborates the order,
  not the class, so it never lifts a ceiling below.
A first-hand line in words only its class prints (the parser's weight 1.0: a traceback, a
kernel's Xid or OOM-killer line, the CUDA runtime's out-of-memory, a kubelet's record; not a
report of what another process saw, not the scheduler's state) starts at FIRST_HAND_OWN_WORDS
when the class's base is lower: the class is named by the process or kernel that failed, in
words no other class prints. Measured before this rule on real public threads (the corpus's
decisive entries present here): every such verdict that no rival, ceiling or contradiction
lowered was right (63 of 63 between 0.7 and 0.9), so a base of 0.72-0.85 promised less than
they keep. Agreeing sources still raise it, and everything below still lowers or caps it.
What lowers it: a decisive line without a reliable time of its own, a rival of another class
within the clock-skew tolerance, the node's kernel log missing while other nodes' are present
(the place the fault would show first-hand was not read), and the ceilings of
`ceilings.thin_evidence` (one second-hand artifact, an ambiguous line nothing
corroborates, a node state not tied to the job). A verdict the scheduler's end state or the
cascade's timing contradicts is held at CONTESTED_CONFIDENCE by the caller, and so is a hang
whose job the scheduler says ended for another reason (contest_hang).
"""

from __future__ import annotations

from goodput_agent.core.events import Clock, Event

from .causal import Cascade, decisive_end_state
from .ceilings import AMBIGUOUS_WEIGHT, secondhand, thin_evidence
from .model import (
    BASE_CONFIDENCE,
    CONTESTED_CONFIDENCE,
    ON_NODE,
    SCHEDULER_KINDS,
    Candidate,
    FailureVerdict,
    weight,
)
from .observations import Observations

CORROBORATION_STEP = 0.05
MAX_CORROBORATIONS = 3
UNTIMED = 0.1  # the order the verdict rests on cannot be checked
RIVAL = 0.15  # another class started as early, within the skew tolerance
KERNEL_LOG_UNREAD = 0.08  # an on-node fault whose node's kernel log is not in the bundle
FLOOR, CEILING = 0.05, 0.97  # never certain either way from logs
FIRST_HAND_OWN_WORDS = 0.9  # the failing process or kernel named the class in its own words


def agreeing_sources(best: Candidate, cands: list[Candidate], events: list[Event],
                     obs: Observations, cascade: Cascade) -> list[str]:
    """The independent sources that agree with the verdict, one sentence each."""
    e = best.event
    agree = []
    files = sorted({c.event.locator.path for c in cands
                    if c.category == best.category and c.event.locator.path != e.locator.path
                    and weight(c.event) > AMBIGUOUS_WEIGHT})
    agree += [f"{path} records {best.category} too" for path in files]
    ended = decisive_end_state(events, obs)
    if ended and ended[0] == best.category and e.kind not in SCHEDULER_KINDS:
        agree.append(f"the scheduler ended the job as "
                     f"{str(ended[1].detail.get('state', '')).upper()}")
    if _starts_the_cascade(best, cascade, obs):
        agree.append(f"the peers' symptoms followed it ({cascade.how})")
    return agree


def _starts_the_cascade(best: Candidate, cascade: Cascade, obs: Observations) -> bool:
    if best.at is None or cascade.onset is None or best.event.clock in (Clock.none,
                                                                         Clock.carried):
        return False
    if cascade.how == Cascade().how or cascade.how == "the job's end":
        return False  # the job's end is no peer's word on the order
    slack = obs.clock.skew_tolerance_s
    return (best.at - cascade.onset).total_seconds() <= slack and not cascade.distant(best.at)


def _own_words_first_hand(e: Event) -> bool:
    return weight(e) >= 1.0 and not secondhand(e) and e.kind not in SCHEDULER_KINDS \
        and not e.detail.get("without_traceback") and not e.detail.get("node_record")


def failure_confidence(best: Candidate, cands: list[Candidate], events: list[Event],
                       obs: Observations, cascade: Cascade, unknowns: list[str]) -> float:
    e = best.event
    conf = BASE_CONFIDENCE.get(best.category, 0.5) * (0.6 + 0.4 * weight(e))
    if _own_words_first_hand(e):
        conf = max(conf, FIRST_HAND_OWN_WORDS)
    agree = agreeing_sources(best, cands, events, obs, cascade)
    conf += CORROBORATION_STEP * min(MAX_CORROBORATIONS, len(agree))
    if e.clock in (Clock.none, Clock.carried) and len({c.category for c in cands}) > 1:
        conf -= UNTIMED
        unknowns.append(f"the first failure ({e.locator}) has no reliable timestamp of its own")
    rivals = [c for c in cands if c.category != best.category and c.at and best.at
              and abs((c.at - best.at).total_seconds()) <= obs.clock.skew_tolerance_s]
    if rivals:
        conf -= RIVAL
        unknowns.append(f"{rivals[0].category} on {rivals[0].event.node} started within the "
                        f"{obs.clock.skew_tolerance_s:g} s skew tolerance of the verdict")
    ceiling, why = thin_evidence(best, cands, obs)
    if ceiling is not None:
        conf = min(conf, ceiling)
        unknowns.extend(why)
    if e.node and obs.kernel_log_nodes and e.node not in obs.kernel_log_nodes \
            and best.category in ON_NODE:
        conf -= KERNEL_LOG_UNREAD
    return round(max(FLOOR, min(CEILING, conf)), 2)


def contest_hang(v: FailureVerdict, events: list[Event], obs: Observations) -> None:
    """A hang is inferred from the ranks' waiting; when the scheduler's own reason for ending
    the job names another class (NODE_FAIL, OUT_OF_MEMORY, PREEMPTED), the two disagree and
    the verdict is contested. TIMEOUT is no rival: a hung job runs into its time limit."""
    ended = decisive_end_state(events, obs)
    if not ended or ended[0] in (v.category, "time_limit"):
        return
    v.confidence = min(v.confidence, CONTESTED_CONFIDENCE)
    state = str(ended[1].detail.get("state", "")).upper()
    v.unknowns.append(f"the scheduler ended the job as {state} ({ended[0]}), which a hang does "
                      "not explain: the two disagree, the verdict is contested")
