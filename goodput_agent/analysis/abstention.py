"""What the confidence of an `unknown` verdict means, the same for every kind of question.

An `unknown` verdict claims that the bundle supports no class: a careful reader of every file
in it would not name a cause either (nothing failed, or what decides is not in the bundle).
Its confidence is how sure that claim is and, like any verdict's, it rests on what was read,
never on silence alone:
- NOTHING_TO_EXPLAIN: a first-hand record says there is nothing to explain (the scheduler's
  COMPLETED 0:0, a job that never started, latency measured over both windows without a rise);
- NOTHING_TO_COMPARE: the question is about a change and the bundle, read whole, holds one
  window of it only (one benchmark result, no earlier run, no server log or metrics): no
  reader can measure a rise from it, so none can name its cause; the doubt left is a second
  window in a file that was not read, and then UNREAD applies;
- READ_NEGATIVE: the sources that would show each class were read and each rules its class
  out with a measured number (the serving engine's own counters over its samples; every
  latency class's deciding metric beside a measured rise that none of them explains);
- NOTHING_READS_AS_FAILURE: nothing started a failure in a bundle read whole, and no line of
  it reads as one that its parser did not understand (parsing/failure_words.py: a failure in a
  form the parsers do not know still prints a failure's words: killed, error, out of memory,
  evicted). What the claim rests on is every line read, each with or without such words;
- NOTHING_NAMES_A_CAUSE: a change was measured (a training log's iteration times grew) and the
  bundle, read whole, names no cause: no line reads as a fault (parsing/failure_words.py), none
  names a class, and what would decide (a trace, the GPUs' clocks) is not in it. A careful
  reader would name none either; but a slowdown's cause can print no fault's words (longer
  sequences, a checkpoint), so it stays at the silence ceiling (record_levels.py);
- SILENCE: nothing was found, and whether every line was read is not known (a file no
  failure tool reads, a tool not called): a healthy job and a failure written in a form the
  parsers do not know look the same from here, so this is a guess's confidence;
- UNEXPLAINED: something did fail or stall (the scheduler's failure state, the peers'
  symptoms, lines that read as a failure that no parser understood) and what started it is not
  in what was read: it is likely in what was not;
- UNREAD: a file of the bundle could not be read, and the answer may be in it.
Never 0: that would promise that the bundle holds an answer the product missed.
`evals/calibration.py` scores an `unknown` verdict as right when the answer key says the
bundle supports no class, at this confidence.
"""

from __future__ import annotations

from goodput_agent.analysis.record_levels import SILENCE_CEILING

NOTHING_TO_EXPLAIN = 0.8
NOTHING_TO_COMPARE = 0.8
READ_NEGATIVE = 0.6
NOTHING_READS_AS_FAILURE = 0.75  # measured: see analysis/failure/quiet_bundle.py
NOTHING_NAMES_A_CAUSE = SILENCE_CEILING
SILENCE = 0.3
UNEXPLAINED = 0.15
UNREAD = 0.1


def unknown_confidence(level: float, unread_files: int = 0) -> float:
    """The confidence of an `unknown` at `level`, held to UNREAD when files went unread."""
    return min(level, UNREAD) if unread_files else level
