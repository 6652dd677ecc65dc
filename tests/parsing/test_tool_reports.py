"""What diagnostic tools print (issue 24): NCCL RAS status, py-spy dumps, the profiler's
key_averages table, a serving benchmark's result, DNS lookups."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.analysis.failure.analyze import diagnose
from goodput_agent.analysis.failure.observations import Observations
from goodput_agent.bundle import scan
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.tool_reports import BENCH_PARSER, PARSER

RAS = """\
Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          4            1          8        8

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2         4         8         8   RUNNING  MISMATCH

Warnings
========

#0-0 (0123456789abcdef) MISMATCH
  Communicator ranks have different AllReduce operation counts
  {majority} ranks have launched up to operation {hi}
  {minority} rank has launched up to operation {lo}
  Rank 5 -- GPU 1 managed by process 777 on node 10.1.2.3
"""


def scan_format(tmp_path: Path, text: str, name: str = "other.txt") -> str | None:
    (tmp_path / name).write_text(text)
    return next((f.format for f in scan(tmp_path).files if f.rel_path == name), None)


def _read(tmp_path: Path, text: str, name: str = "report.txt"):
    (tmp_path / name).write_text(text)
    fmt = scan(tmp_path).files[0].format
    parser = BENCH_PARSER if fmt == "bench_summary" else PARSER
    return fmt, parser.parse(tmp_path / name, ParseContext(rel_path=name))


def test_a_ras_mismatch_with_the_listed_rank_behind_names_it(tmp_path: Path) -> None:
    fmt, res = _read(tmp_path, RAS.format(majority=7, hi=412, minority=1, lo=411))
    assert fmt == "tool_report"
    v = diagnose(Observations(events=res.events))
    assert (v.category, v.rank) == ("hang", 5) and "411" in v.summary


# NCCL prints a lone outlier rank with its own count on its line (ras/client_support.cc:
# "Rank %d has launched up to operation %ld -- GPU %s managed by process %d on node %s")
RAS_LONE = RAS.split("  {minority} rank has")[0] + (
    "  Rank 5 has launched up to operation {lo} -- GPU 1 managed by process 777 on node "
    "10.1.2.3\n")


def test_a_lone_outlier_rank_with_its_own_count_is_read_both_ways(tmp_path: Path) -> None:
    _, behind = _read(tmp_path, RAS_LONE.format(majority=7, hi=412, lo=411))
    v = diagnose(Observations(events=behind.events))
    assert (v.category, v.rank) == ("hang", 5) and "411" in v.summary
    _, ahead = _read(tmp_path, RAS_LONE.format(majority=7, hi=411, lo=412))
    v = diagnose(Observations(events=ahead.events))
    assert (v.category, v.rank) == ("hang", None)


def test_a_ras_mismatch_with_the_listed_rank_ahead_blames_no_one(tmp_path: Path) -> None:
    # RAS lists the smaller group: here it is ahead, and the ranks behind are not named
    _, res = _read(tmp_path, RAS.format(majority=7, hi=411, minority=1, lo=412))
    v = diagnose(Observations(events=res.events))
    assert (v.category, v.rank) == ("hang", None) and "not the culprits" in v.summary


def test_a_pyspy_dump_waiting_in_a_collective_is_a_hang_without_a_rank(tmp_path: Path) -> None:
    _, res = _read(tmp_path, (
        "Process 4242: python train.py\nPython v3.11.4 (/usr/bin/python3.11)\n\n"
        'Thread 4242 (idle): "MainThread"\n    forward (model.py:88)\n'
        "Thread 4300 (active)\n"
        "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n"
        "    wrapper (torch/distributed/c10d_logger.py:72)\n"))
    v = diagnose(Observations(events=res.events))
    assert (v.category, v.rank) == ("hang", None) and v.confidence <= 0.5


def test_a_profiler_table_is_read_as_a_profile_with_no_failure(tmp_path: Path) -> None:
    fmt, res = _read(tmp_path, (
        "-----------------  ------------  ------------  ------------  ------------\n"
        "             Name    Self CPU %      Self CPU   CPU total %     CPU total\n"
        "-----------------  ------------  ------------  ------------  ------------\n"
        "     aten::conv2d         0.12%     117.000us        66.91%      67.570ms\n"))
    assert (fmt, res.facts["report"], res.events) == ("tool_report", "profile", [])


def test_a_benchmark_summary_is_the_latency_questions_and_keeps_its_numbers(tmp_path) -> None:
    fmt, res = _read(tmp_path, (
        "============ Serving Benchmark Result ============\n"
        "Successful requests:                     100\n"
        "Mean TTFT (ms):                          84.20\n"
        "Median ITL (ms):                         11.90\n"))
    assert fmt == "bench_summary"
    assert res.facts["benchmark"]["Mean TTFT (ms)"] == "84.20"


def test_getent_hosts_lines_map_an_ip_to_its_host(tmp_path: Path) -> None:
    _, res = _read(tmp_path, "10.3.147.116    a100-26.int.lab a100-26\n"
                             "10.3.147.119    a100-27.int.lab a100-27\n")
    assert res.facts["host_ips"] == {"a100-26.int.lab": ["10.3.147.116"],
                                     "a100-27.int.lab": ["10.3.147.119"]}


def test_a_real_etc_hosts_with_its_ipv6_lines_and_comments_maps_its_addresses(
        tmp_path: Path) -> None:
    # Debian's default /etc/hosts holds IPv6 lines and comments beside the cluster's names
    _, res = _read(tmp_path, ("127.0.0.1\tlocalhost\n"
                              "::1\tlocalhost ip6-localhost ip6-loopback\n"
                              "fe00::0\tip6-localnet\nff02::1\tip6-allnodes\n"
                              "# cluster nodes\n"
                              "10.17.144.68\th100-sxm-025.cluster.example.org\th100-sxm-025\n"
                              "10.17.144.70 h100-sxm-026.cluster.example.org  # rack 4\n"))
    assert res.facts["host_ips"]["h100-sxm-025.cluster.example.org"] == ["10.17.144.68"]
    assert res.facts["host_ips"]["h100-sxm-026.cluster.example.org"] == ["10.17.144.70"]


def test_clock_times_at_the_start_of_lines_are_no_ipv6_hosts_table(tmp_path: Path) -> None:
    assert scan_format(tmp_path, "12:34:56 worker ready\n12:35:01 worker done\n") != \
        "tool_report"


def test_a_log_with_an_address_at_the_start_of_a_line_is_no_hosts_table(tmp_path: Path) -> None:
    text = ("10.0.0.5 - - [01/May/2024:10:00:00 +0000] \"GET / HTTP/1.1\" 200 12\n"
            "10.0.0.6 worker ready\n")
    assert scan_format(tmp_path, text) != "tool_report"


def test_dns_lookups_map_a_peer_ip_to_its_host(tmp_path: Path) -> None:
    _, res = _read(tmp_path, ("Server:  10.0.0.2\nAddress: 10.0.0.2#53\n\n"
                              "Name:   gpu-17.cluster\nAddress: 10.1.2.17\n\n"
                              "4.0.1.10.in-addr.arpa\tname = gpu-04.cluster.\n"))
    assert res.facts["host_ips"] == {"gpu-17.cluster": ["10.1.2.17"],
                                     "gpu-04.cluster": ["10.1.0.4"]}


def test_the_host_commands_reverse_lookup_maps_an_ip_too(tmp_path: Path) -> None:
    _, res = _read(tmp_path, "35.102.0.10.in-addr.arpa domain name pointer gpu-39.lab.\n")
    assert res.facts["host_ips"] == {"gpu-39.lab": ["10.0.102.35"]}


RAS_DEAD_HEAD = RAS.split("Communicators")[0] + """\
Errors
======

DEAD
  {n} job process{es} considered dead (unreachable via the RAS network)
"""


def _ras_dead(procs: list[tuple[int, str, int]]) -> str:
    n = len(procs)
    head = RAS_DEAD_HEAD.format(n=n, es="es are" if n > 1 else " is")
    return head + "".join(f"  Process {p} on node {node} managing GPU {g}\n"
                          for p, node, g in procs) + "\nWarnings\n========\n"


def test_ras_every_process_of_a_node_dead_is_that_node_failing(tmp_path: Path) -> None:
    """The job summary says 4 processes per node: all 4 on 10.1.2.3 dead is the node."""
    text = _ras_dead([(100 + g, "10.1.2.3", g) for g in range(4)])
    events = _read(tmp_path, text)[1].events
    assert [(e.category, e.node, e.detail["ras_dead"]) for e in events] == [
        ("node_failure", "10.1.2.3", 4)]
    verdict = diagnose(Observations(events=events, facts={
        "dns": {"host_ips": {"gpu-03": ["10.1.2.3"]}}}, job_nodes=["gpu-03", "gpu-04"]))
    assert (verdict.category, verdict.node) == ("node_failure", "gpu-03")


def test_ras_one_dead_process_is_that_process_crashing_not_its_node(tmp_path: Path) -> None:
    """NCCL's RAS guide: one job process crashing shows as one DEAD process."""
    events = _read(tmp_path, _ras_dead([(3487984, "10.1.2.3", 1)]))[1].events
    assert not [e for e in events if e.category == "node_failure"]


def test_each_dumped_process_gives_its_pid_and_main_threads_frames_idle_or_active(
        tmp_path: Path) -> None:
    # two dumps one after the other (a loop of `py-spy dump --pid P` over a node's ranks); the
    # MainThread is named wherever it is, and read whatever its state
    _, res = _read(tmp_path, (
        "Process 5101: python train.py\nPython v3.10.12 (/usr/bin/python3.10)\n\n"
        'Thread 5180 (idle): "Thread-2 (_pin_memory_loop)"\n'
        "    select (selectors.py:415)\n"
        'Thread 5101 (idle): "MainThread"\n'
        "    get (multiprocessing/queues.py:113)\n"
        "    _try_get_data (torch/utils/data/dataloader.py:1133)\n"
        "Process 5102: python train.py\nPython v3.10.12 (/usr/bin/python3.10)\n\n"
        'Thread 5102 (active+gil): "MainThread"\n'
        "    synchronize (torch/cuda/__init__.py:954)\n"
        "    train_step (train.py:175)\n"), name="node-a.txt")
    dumps = [e for e in res.events if e.detail.get("stack_dump")]
    got = [(e.detail["pid"], e.detail["thread"], e.detail["active"], e.detail["frames"][0],
            e.locator.line_start) for e in dumps]
    assert got == [
        (5101, "MainThread", False, ["get", "multiprocessing/queues.py", 113], 7),
        (5102, "MainThread", True, ["synchronize", "torch/cuda/__init__.py", 954], 13)]
    assert all(e.role == "context" and e.rank is None for e in dumps)
    # an idle thread in a synchronize is no collective of its own: nothing decided here
    assert not [e for e in res.events if e.detail.get("stuck_in_collective")]


NCCL_TESTS_ROWS = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
       32768          8192     float     sum      -1    18.66    1.76    3.07       0    17.95    1.83    3.20       0
       65536         16384     float     sum      -1    18.95    3.46    6.05       0    18.25    3.59    6.28       {w}
     1048576        262144     float     sum      -1    27.76   37.78   66.11       0    27.49   38.15   66.76       0
# Avg bus bandwidth    : 25.3
"""  # noqa: E501


def test_nccl_tests_result_rows_are_a_benchmark_not_a_failure(tmp_path: Path) -> None:
    fmt, res = _read(tmp_path, NCCL_TESTS_ROWS.format(w=0))
    assert (fmt, res.facts["report"], res.events) == ("tool_report", "nccl_tests", [])
    assert res.facts["nccl_tests"] == {"sizes": 3, "max_bytes": 1048576, "wrong": 0}
    _, bad = _read(tmp_path, NCCL_TESTS_ROWS.format(w=4))
    assert bad.facts["nccl_tests"]["wrong"] == 4
    # only the header rows (no results) is no benchmark output
    assert scan_format(tmp_path, NCCL_TESTS_ROWS.split("       32768")[0]) != "tool_report"


def test_nccl_tests_rows_whatever_separates_their_columns(tmp_path: Path) -> None:
    """The literal gate before the row pattern holds for every row the pattern reads: rows
    whose columns a paste turned into tabs are the same benchmark."""
    tabbed = "\n".join("\t".join(ln.split()) if not ln.startswith("#") else ln
                       for ln in NCCL_TESTS_ROWS.format(w=0).splitlines()) + "\n"
    fmt, res = _read(tmp_path, tabbed)
    assert (fmt, res.facts["report"]) == ("tool_report", "nccl_tests")
    assert res.facts["nccl_tests"]["sizes"] == 3
