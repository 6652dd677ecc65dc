"""The issue-24 shapes of the independent generator are the stories their answer keys claim:
the decisive line really sits past 200 KB, the lone rank really is alone in a larger world,
the pasted files really are cut at the terminal's width, the host really is only in a file
name. (The product's score on them is measured by `goodput eval --suite independent`.)"""

from __future__ import annotations

import random
import re

import pytest

from goodput_agent.evals.independent.case import Case
from goodput_agent.evals.independent.shapes import SHAPES

MAKERS = {name: (maker, n) for _, name, maker, n in SHAPES}


def _cases(name: str, seed: int = 14) -> list[Case]:
    maker, n = MAKERS[name]
    return [maker(random.Random(f"{seed}:{name}:{v}"), f"x-{name}-{v}", v) for v in range(n)]


def _text(case: Case) -> str:
    return max((t for r, t in case.files.items() if r != "incident.yaml"), key=len)


@pytest.mark.parametrize("seed", [14, 15, 16])
def test_long_log_decisive_line_sits_after_200_kb(seed: int) -> None:
    for case in _cases("c1-long_job_log", seed):
        data = _text(case).encode()
        decisive = max(data.find(b"DUE TO TIME LIMIT"), data.find(b"OutOfMemoryError"))
        assert decisive > 200_000, case.expected.case_id
        head = data[:16384].decode()
        assert "NCCL" not in head and "slurmstepd" not in head  # nothing familiar up front


def test_lone_rank_is_alone_in_a_larger_world() -> None:
    for case in _cases("c6-one_rank_alone"):
        outputs = [t for r, t in case.files.items() if r != "incident.yaml"]
        assert len(outputs) == 1
        world = int(re.search(r"nranks (\d+)", outputs[0]).group(1))
        ranks = set(re.findall(r"\[Rank (\d+)\]", outputs[0]))
        assert world > 1 and len(ranks) == 1
        assert case.expected.category == "unknown" and case.expected.max_confidence <= 0.5


def test_pasted_files_are_cut_at_the_terminal_width() -> None:
    for case in _cases("c11-hard_wrapped"):
        pasted = {r: t for r, t in case.files.items() if "-pasted" in r}
        assert pasted
        width = max(len(x) for t in pasted.values() for x in t.splitlines())
        assert width in (80, 100, 116)
        kern = next(t for r, t in pasted.items() if r.startswith("nodes/"))
        assert "Xid" in kern or "fallen off" in kern
        assert any(len(x) == width for x in kern.splitlines())  # a kernel line was cut


def test_host_is_only_in_the_kernel_file_name() -> None:
    for case in _cases("c7-host_named_files"):
        host = case.expected.node
        kernel = [r for r in case.files if "dmesg" in r or r.startswith("kern.")]
        assert len(kernel) == 2 and not any(r.startswith("nodes/") for r in kernel)
        mine = next(r for r in kernel if host in r)
        assert "Xid" in case.files[mine] or "fallen off" in case.files[mine]
        assert host not in case.files[mine]


def test_syslog_lines_carry_escaped_colour_and_the_rank() -> None:
    case = _cases("c11-syslog_coloured")[0]
    rank = case.expected.rank
    hits = [x for r, t in case.files.items() if r.endswith("syslog") for x in t.splitlines()
            if "OutOfMemoryError" in x]
    assert hits and all(f"[rank{rank}]:#011#033[" in x for x in hits)


def test_ras_names_the_culprit_by_ip_and_the_lookup_maps_it() -> None:
    case = _cases("c2-ras_mismatch_hang")[0]
    ras = next(t for r, t in case.files.items() if "ras" in r)
    ip = re.search(rf"Rank {case.expected.rank} has launched .* on node (\S+)", ras).group(1)
    lookup = next(t for r, t in case.files.items()
                  if r in ("nslookup.txt", "host_lookup.txt", "getent_hosts.txt", "etc_hosts"))
    rev = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
    line = next(x for x in lookup.splitlines() if x.startswith(ip) or x.startswith(rev))
    assert case.expected.node in line


def _rank_of(rel: str, line: str) -> int:
    named = re.search(r"rank[_-]?(\d+)", rel)
    if named:
        return int(named.group(1))
    m = re.match(r"\[(?:rank|default)(\d+)\]:|(\d+): ", line)
    return int(m.group(1) or m.group(2))


def test_straggler_rank_is_the_slow_one_in_its_own_lines() -> None:
    case = _cases("c8-per_rank_straggler")[0]
    slow = {_rank_of(rel, x) for rel, t in case.files.items() for x in t.splitlines()
            if (m := re.search(r"fwd_bwd (\d+) ms", x)) and float(m.group(1)) > 1100}
    assert slow == {case.expected.rank}
