"""Checkpoint saves and steps from each framework's own line formats (the strings in their source:
megatron/training/checkpointing.py and training.py, deepspeed/runtime/engine.py and
checkpoint_engine/torch_checkpoint_engine.py, torchtitan/components/checkpoint.py,
lightning/pytorch/callbacks/model_checkpoint.py, transformers/trainer.py and modeling_utils.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.accounting.progress import read_progress, save_match
from goodput_agent.parsing.timefmt import ClockPolicy


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _progress(tmp_path: Path, text: str):  # noqa: ANN202 - a Progress
    log = tmp_path / "train.log"
    log.write_text(text)
    return read_progress([(log, "logs/train.log")], ClockPolicy())


MEGATRON = """\
 [2024-05-01 10:00:00] iteration       99/   20000 | consumed samples:        12672 | elapsed time per iteration (ms): 1234.5 | lm loss: 2.345678E+00 |
 [2024-05-01 10:00:01] iteration      100/   20000 | consumed samples:        12800 | elapsed time per iteration (ms): 1234.5 | lm loss: 2.345000E+00 |
saving checkpoint at iteration     100 to /ckpt/gpt in torch_dist format
  successfully saved checkpoint from iteration     100 to /ckpt/gpt [ t 1/1, p 1/1 ]
 [2024-05-01 10:00:09] iteration      101/   20000 | consumed samples:        12928 | elapsed time per iteration (ms): 1234.5 | lm loss: 2.344000E+00 |
"""  # noqa: E501


def test_megatron_untimed_save_lines_sit_between_the_timed_lines(tmp_path: Path) -> None:
    p = _progress(tmp_path, MEGATRON)
    assert [s.step for s in p.steps] == [99, 100, 101]  # the save lines are not steps
    [save] = p.saves
    assert (save.family, save.step) == ("megatron", 100)
    # begun after the last timed line before it, over by the first timed line after it
    assert (save.start, save.end) == (_t("2024-05-01T10:00:01"), _t("2024-05-01T10:00:09"))
    assert save.locator == "logs/train.log:4"


DEEPSPEED = """\
[2024-05-01 10:00:04,900] [INFO] [logging.py:96:log_dist] [Rank 0] step=100, skipped=0, lr=[1e-4], mom=[(0.9, 0.95)]
[2024-05-01 10:00:05,000] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint global_step100 is about to be saved!
[2024-05-01 10:00:05,123] [INFO] [logging.py:96:log_dist] [Rank 0] Saving model checkpoint: /ckpt/global_step100/mp_rank_00_model_states.pt
[2024-05-01 10:00:05,124] [INFO] [torch_checkpoint_engine.py:21:save] [Torch] Saving /ckpt/global_step100/mp_rank_00_model_states.pt...
[2024-05-01 10:00:09,800] [INFO] [torch_checkpoint_engine.py:23:save] [Torch] Saved /ckpt/global_step100/mp_rank_00_model_states.pt.
[2024-05-01 10:00:12,500] [INFO] [torch_checkpoint_engine.py:23:save] [Torch] Saved /ckpt/global_step100/zero_pp_rank_0_mp_rank_00_optim_states.pt.
[2024-05-01 10:00:12,600] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step100 is ready now!
[2024-05-01 10:00:14,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=101, skipped=0, lr=[1e-4], mom=[(0.9, 0.95)]
"""  # noqa: E501


def test_deepspeed_save_runs_from_about_to_be_saved_to_ready(tmp_path: Path) -> None:
    p = _progress(tmp_path, DEEPSPEED)
    [save] = p.saves
    assert save.family == "deepspeed" and save.step == 100
    assert (save.start, save.end) == (_t("2024-05-01T10:00:05"), _t("2024-05-01T10:00:12.600"))
    assert [s.step for s in p.steps] == [100, 101]


TORCHTITAN = """\
[rank0]:2025-04-01 00:25:47,084 - root - INFO - step: 640/644 = 99.3789%  loss:  6.2116  memory: 87.04GiB(93.48%)  tps: 52,142  mfu: 3.09%
[rank0]:2025-04-01 00:25:54,090 - root - INFO - Saving the checkpoint (or staging if async is enabled).
[rank0]:2025-04-01 00:25:59,616 - root - INFO - Finished saving the checkpoint (or staging if async is enabled)in 5.53 seconds.
"""  # noqa: E501


def test_dcp_save_as_torchtitan_logs_it(tmp_path: Path) -> None:
    p = _progress(tmp_path, TORCHTITAN)
    [save] = p.saves
    assert save.family == "pytorch_dcp"
    assert (save.end - save.start).total_seconds() == pytest.approx(5.526)
    assert [s.step for s in p.steps] == [640]


LIGHTNING = """\
2024-05-01 10:00:00,000 INFO Epoch 0:  50%|█████     | 499/1000 [10:00<10:00, 0.83it/s, v_num=0, train_loss=2.31, global_step=499]
2024-05-01 10:00:02,000 INFO Epoch 0, global step 500: 'val_loss' reached 0.41234 (best 0.41234), saving model to '/ckpt/epoch=0-step=500.ckpt' as top 1
"""  # noqa: E501


def test_lightning_model_checkpoint_line_is_a_checkpoint_instant(tmp_path: Path) -> None:
    p = _progress(tmp_path, LIGHTNING)
    [save] = p.saves
    assert (save.family, save.step) == ("lightning", 500)
    assert save.start == save.end == _t("2024-05-01T10:00:02")
    # the progress bar is a step line (its number is the epoch the shared vocabulary reads
    # first); the checkpoint line is not one, though it says "global step 500"
    assert [s.time for s in p.steps] == [_t("2024-05-01T10:00:00")]


HF_TRAINER = """\
[INFO|trainer.py:3512] 2024-05-01 10:00:00,123 >> Saving model checkpoint to out/checkpoint-500
[INFO|configuration_utils.py:471] 2024-05-01 10:00:00,200 >> Configuration saved in out/checkpoint-500/config.json
[INFO|modeling_utils.py:2598] 2024-05-01 10:00:03,456 >> Model weights saved in out/checkpoint-500/model.safetensors
"""  # noqa: E501


def test_hugging_face_trainer_save(tmp_path: Path) -> None:
    p = _progress(tmp_path, HF_TRAINER)
    [save] = p.saves
    assert (save.family, save.step) == ("huggingface", 500)
    assert (save.start, save.end) == (_t("2024-05-01T10:00:00.123"),
                                      _t("2024-05-01T10:00:03.456"))


@pytest.mark.parametrize(("line", "family", "edge"), [
    ("saving checkpoint at iteration    2000 to /ckpt in torch_dist format", "megatron", "start"),
    ("  successfully saved checkpoint from iteration    2000 to /ckpt", "megatron", "end"),
    ("[Rank 0] Saving model checkpoint: /c/global_step7/mp_rank_00_model_states.pt",
     "deepspeed", "start"),
    ("Finished saving the checkpoint (or staging if async is enabled)in 1.00 seconds.",
     "pytorch_dcp", "end"),
    ("Saving model checkpoint to out/checkpoint-9", "huggingface", "start"),
])
def test_each_family_and_edge(line: str, family: str, edge: str) -> None:
    found = save_match(line)
    assert found is not None and found[:2] == (family, edge)


def test_lines_that_only_mention_checkpoints_are_not_saves() -> None:
    for line in ("loading checkpoint from /ckpt at iteration 100",
                 "[Torch] Loading checkpoint from /c/global_step7/x.pt...",
                 "resuming from checkpoint-500"):
        assert save_match(line) is None
