"""Engine-argument files are identified by content (revisions YAML or one vLLM command line),
and logs that merely mention vLLM are not."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.bundle import open_bundle
from goodput_agent.parsing.engine_config import PARSER
from goodput_agent.parsing.registry import identify

REVISIONS = """# engine arguments per deployment revision
revisions:
- from: '2025-06-01T17:00:00Z'
  args: [vllm, serve, llama-3.1-8b, --max-num-seqs, '128']
"""
COMMAND = ("vllm serve meta-llama/Llama-3.1-8B \\\n"
           "  --max-num-seqs 64 --gpu-memory-utilization 0.9\n")
LOG = "\n".join(f"INFO 06-01 17:{i:02d}:00 engine.py:267] Avg prompt throughput: 1.0 tokens/s, "
                f"vllm --max-num-seqs noted" for i in range(40))


def test_revisions_and_command_lines_are_engine_config() -> None:
    assert identify(REVISIONS, "engine_args.yaml") is PARSER
    assert identify(COMMAND, "cmdline.txt") is PARSER


def test_a_log_mentioning_vllm_flags_is_not_engine_config() -> None:
    assert not PARSER.sniff(LOG, "server.log")
    assert not PARSER.sniff("revisions:\n- from: x\n  args: [python, train.py]\n", "r.yaml")


def test_the_latency_case_config_is_read_not_unread(tmp_path: Path) -> None:
    (tmp_path / "settings").mkdir()  # not a config/ folder: found by content
    (tmp_path / "settings" / "engine.yaml").write_text(REVISIONS)
    with open_bundle(tmp_path) as bundle:
        inv = bundle.inventory
        assert [f.rel_path for f in inv.of_format("engine_config")] == ["settings/engine.yaml"]
        assert not [u for u in inv.unread if u.path == "settings/engine.yaml"]
