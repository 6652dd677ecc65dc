"""Gathering the failure analysis' input: a file no folder places is the node its name holds
as a whole word (issue 24 class 7, hosts from per-host file names), for kernel logs too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from goodput_agent.bundle import scan
from goodput_agent.planner.observe import files_named_after_nodes

XID = "[Tue Sep 15 10:18:06 2026] NVRM: Xid (PCI:0000:9b:00): 79, pid=2393827, name=python, " \
      "GPU has fallen off the bus.\n"
NODES = {"a100-3", "a100-38", "gpu-node-7", "gpu-node-9.cluster.local"}


@pytest.mark.parametrize(("name", "node"), [
    ("dmesg-a100-38.txt", "a100-38"),  # the longer name, whole, not a100-3 inside it
    ("a100-3.dmesg", "a100-3"),
    ("kern.gpu-node-7.log", "gpu-node-7"),
    ("syslog_a100-38", "a100-38"),
    ("dmesg-gpu-node-9.txt", "gpu-node-9.cluster.local"),  # the short name of an FQDN
    ("dmesg-a100-381.txt", None),  # another node's name, not a word of it
    ("dmesg.txt", None),
])
def test_a_file_named_after_a_node_is_that_nodes(tmp_path: Path, name: str,
                                                  node: str | None) -> None:
    (tmp_path / name).write_text(XID)
    named = files_named_after_nodes(scan(tmp_path), NODES)
    assert named.get(name) == node


def test_a_folder_that_names_the_node_is_not_overruled(tmp_path: Path) -> None:
    (tmp_path / "nodes" / "gpu-node-7").mkdir(parents=True)
    (tmp_path / "nodes" / "gpu-node-7" / "dmesg-a100-38.txt").write_text(XID)
    assert files_named_after_nodes(scan(tmp_path), NODES) == {}


def test_of_two_spellings_of_one_node_the_whole_one_wins_in_any_order(tmp_path: Path) -> None:
    """The scheduler's name and NCCL's FQDN of one node both match a dmesg file's name; which
    one the file got decided whether its Xid counted as checked on the verdict's node, and it
    followed the interpreter's string hashing (a confidence of 0.92 or 0.97 run to run)."""
    (tmp_path / "hpc-g3n1_dmesg.log").write_text(XID)
    code = ("import sys; from pathlib import Path; from goodput_agent.bundle import scan; "
            "from goodput_agent.planner.observe import files_named_after_nodes; "
            "print(files_named_after_nodes(scan(Path(sys.argv[1])), "
            "{'hpc-g3n1', 'hpc-g3n1.cluster.example.org'})['hpc-g3n1_dmesg.log'])")
    named = {subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, text=True,
                            capture_output=True, env={**os.environ, "PYTHONHASHSEED": seed}
                            ).stdout.strip() for seed in ("0", "1", "3", "7")}
    assert named == {"hpc-g3n1"}
