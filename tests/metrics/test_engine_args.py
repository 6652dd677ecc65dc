"""A serving engine's arguments from a bundle (metrics/engine_args.py): revisions over time, or
one command line; a bad file is one clear line naming it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from goodput_agent.core.errors import BadInput
from goodput_agent.metrics.engine_args import load_engine_args


def test_engine_args_revisions(tmp_path: Path) -> None:
    f = tmp_path / "engine_args.yaml"
    f.write_text("revisions:\n"
                 "  - from: '2025-06-03T10:00:00Z'\n"
                 "    args: vllm serve m --max-num-seqs 32\n"
                 "  - from: '2025-06-01T00:00:00Z'\n"
                 "    args: [vllm, serve, m, --max-num-seqs, '256']\n")
    revs = load_engine_args(f, "config/engine_args.yaml")
    assert [r.args["max_num_seqs"] for r in revs] == ["256", "32"]
    assert revs[1].since == datetime(2025, 6, 3, 10, tzinfo=UTC)
    assert revs[0].source == "config/engine_args.yaml"


def test_engine_args_as_one_command_line(tmp_path: Path) -> None:
    f = tmp_path / "args.txt"
    f.write_text("vllm serve m \\\n  --gpu-memory-utilization 0.8 \\\n  -tp 4\n")
    (rev,) = load_engine_args(f, "args.txt")
    assert rev.since is None
    assert rev.args == {"model": "m", "gpu_memory_utilization": "0.8",
                        "tensor_parallel_size": "4"}


def test_bad_engine_args_files(tmp_path: Path) -> None:
    f = tmp_path / "e.yaml"
    f.write_text("revisions: [{from: '2025-06-03T10:00:00Z'}]\n")
    with pytest.raises(BadInput, match="e.yaml: revision 1 has no `args`"):
        load_engine_args(f, "e.yaml")
    f.write_text("revisions: [{from: 'yesterday', args: 'vllm serve m'}]\n")
    with pytest.raises(BadInput, match="'yesterday' is not an ISO 8601 time"):
        load_engine_args(f, "e.yaml")
    f.write_text("revisions: [unclosed\n")
    with pytest.raises(BadInput, match="e.yaml: not valid YAML"):
        load_engine_args(f, "e.yaml")
