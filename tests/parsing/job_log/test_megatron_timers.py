"""Megatron's timers as megatron/core/timers.py prints them (minmax and max log options), read
as blocks of the max across ranks, and per-rank step parts read beside the step time."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER
from goodput_agent.parsing.job_log.iterations import has_series, iteration_parts

MINMAX = ("[rank7]: [2024-05-01 10:00:{s:02d}] iteration {i:>8}/   13700 | consumed samples: "
          "{c} | elapsed time per iteration (ms): 1543.3 | lm loss: 3.09E+00 |\n") + """\
[rank7]:(min, max) time across ranks (ms):
[rank7]:    forward-backward ...............................: (1498.09, 1538.89)
[rank7]:    batch-generator ................................: ({b:.2f}, {b2:.2f})
[rank7]:    optimizer ......................................: (34.99, 35.55)
"""


def test_minmax_timer_blocks_are_read_with_each_timers_line(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("".join(MINMAX.format(s=i, i=i * 10, c=i * 1024, b=2.0 + i, b2=2.5 + i)
                         for i in range(5)))
    res = PARSER.parse(p, ParseContext(rel_path="train.log"))
    blocks = res.facts["timers"]
    assert len(blocks) == 5 and len(res.facts["iterations"]) == 5
    assert blocks[2]["times"] == {"forward-backward": 1538.89, "batch-generator": 4.5,
                                  "optimizer": 35.55}
    assert blocks[0]["line"] == 2 and blocks[0]["lines"]["batch-generator"] == 4
    assert blocks[2]["mins"]["batch-generator"] == 4.0


def test_max_only_blocks_and_a_block_ended_by_another_line(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("max time across ranks (ms):\n"
                 "    forward-backward ...............................: 1512.40\n"
                 "    all-grads-sync .................................: 25.98\n"
                 " [after training is done] datetime: 2024-05-01 10:00:00\n"
                 "    optimizer ......................................: 35.55\n")
    res = PARSER.parse(p, ParseContext(rel_path="train.log"))
    assert res.facts["timers"] == [{"line": 1, "times": {"forward-backward": 1512.4,
                                                         "all-grads-sync": 25.98},
                                    "lines": {"forward-backward": 2, "all-grads-sync": 3}}]


def test_per_rank_step_parts_are_read_beside_the_step_time(tmp_path: Path) -> None:
    line = "step 50 | step_time 878 ms | fwd_bwd 811 ms | allreduce_wait 19 ms | tokens/s 3732"
    assert iteration_parts(line) == [("fwd_bwd", 811.0), ("allreduce_wait", 19.0)]
    p = tmp_path / "train.out"
    p.write_text("".join(f"[rank{r}]:{line}\n" for r in range(3)))
    res = PARSER.parse(p, ParseContext(rel_path="train.out"))
    assert [pt[:3] for pt in res.facts["iterations"]] == [[50, 878.0, r] for r in range(3)]
    assert [50, "fwd_bwd", 811.0, 1, 2] in res.facts["iteration_parts"]
    assert has_series(p, enough=3) and not has_series(p, enough=4)
