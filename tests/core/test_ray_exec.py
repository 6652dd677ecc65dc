"""`--ray` against a real two-node Ray cluster on this host (tests/servers/ray_cluster.py): the
same verdict as the local run for a failure bundle and a multi-rank trace set, a worker killed
mid-task retried with the result unchanged, node-local files placed on their node."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.analysis.slowdown.rank_digest import digest_trace
from goodput_agent.cli import cli
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import open_ledger
from tests.cli.test_trace import write_rank
from tests.servers.ray_cluster import RayCluster, slow_once

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'goodput[ray]')")
REPO = Path(__file__).resolve().parents[2]
# two failures (a cause, a hang) and a slowdown with DCGM metrics beside its traces
BUNDLES = ["cases/c01-gpu-hardware-xid79", "cases/c07-hang-dataloader-stall",
           "slowdown_cases/s05-gpu-throttling"]
VOLATILE = {"id", "investigation_id"}  # ledger row ids: all that differs between two runs


@pytest.fixture(scope="module")
def runner(ray_cluster: RayCluster):
    from goodput_agent.core.ray_exec import RayRunner

    return RayRunner(ray_cluster.address, progress=False)


def _stable(value: object) -> object:
    """The report without what differs between two runs of the same investigation."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _report(case: Path, tmp: Path, runner: object) -> dict:
    with open_ledger(tmp / "ledger.duckdb") as ledger:
        report = investigate_bundle(case, ledger, ignore=("expected.json",),
                                    pictures_dir=tmp / "pictures", runner=runner)
    return _stable(json.loads(report.to_json()))


@pytest.mark.parametrize("name", BUNDLES)
def test_a_bundle_gets_the_local_verdict(name, runner, tmp_path):
    case = REPO / "evals" / name
    before = runner.jobs_done
    local, on_ray = _report(case, tmp_path, None), _report(case, tmp_path, runner)
    assert local["root_cause"]["category"] != "unknown"
    assert runner.jobs_done > before  # its files were read by Ray tasks
    assert on_ray == local


def _trace_sets(root: Path, ranks: int = 4) -> tuple[Path, Path]:
    for r in range(ranks):
        write_rank(root / "base" / f"rank{r}.json.gz", r)
        write_rank(root / "slow" / f"rank{r}.json.gz", r, stall_us=3_000 if r == 1 else 0)
    return root / "base", root / "slow"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout


def test_trace_diff_and_summary_on_ray_print_what_the_local_run_prints(runner, ray_cluster,
                                                                        tmp_path):
    base, slow = _trace_sets(tmp_path)
    local = _cli("trace", "diff", str(base), str(slow), "--json")
    on_ray = _cli("trace", "diff", str(base), str(slow), "--json", "--ray", ray_cluster.address)
    assert local[0] in (0, 3) and json.loads(local[1])["breakdown"]["incident"]["ranks"]
    assert on_ray == local
    assert "ray: 8/8 ranks done" in CliRunner().invoke(cli, [  # progress: ranks done of ranks
        "trace", "diff", str(base), str(slow), "--ray", ray_cluster.address]).stderr
    one = str(slow / "rank1.json.gz")
    assert _cli("trace", "summary", one, "--json", "--ray", ray_cluster.address) == \
        _cli("trace", "summary", one, "--json")


def test_a_worker_killed_mid_task_is_retried_and_the_result_is_unchanged(runner, tmp_path):
    base, _ = _trace_sets(tmp_path)
    files = sorted(base.iterdir())
    markers = [tmp_path / f"attempt-{i}" for i in range(len(files))]
    for m in markers[1:]:
        m.write_text("")  # only the first job sleeps on its first attempt
    jobs = [(str(m), str(f), f.name, None) for m, f in zip(markers, files, strict=True)]
    got: list = []
    worker = threading.Thread(target=lambda: got.extend(runner.map_files(slow_once, jobs)))
    worker.start()
    deadline = time.monotonic() + 120
    while not (markers[0].exists() and markers[0].read_text()):
        assert time.monotonic() < deadline, "the slow task never started"
        time.sleep(0.2)
    pid = int(markers[0].read_text())
    os.kill(pid, signal.SIGKILL)  # the Ray worker process running the task
    worker.join(timeout=180)
    assert not worker.is_alive(), "the killed task was not retried"
    assert got == [digest_trace(str(f), f.name, None) for f in files]


def test_a_node_local_file_is_placed_on_its_node(runner, ray_cluster):
    nodes = {n["NodeManagerAddress"]: n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert runner.node_of(ray_cluster.worker_ip) == nodes[ray_cluster.worker_ip]
    assert runner.node_of("no-such-host.example") is None
    placed = runner._options(ray_cluster.worker_ip, here_only=False)["scheduling_strategy"]
    assert placed.node_id == nodes[ray_cluster.worker_ip] and placed.soft
    pinned = runner._options(None, here_only=True)["scheduling_strategy"]
    here = ray.get_runtime_context().get_node_id()  # the driver's node
    assert pinned.node_id == here != nodes[ray_cluster.worker_ip] and not pinned.soft


def test_collect_reads_another_nodes_kernel_log_on_that_node(runner, ray_cluster, tmp_path):
    from goodput_agent.collect.base import BundleWriter
    from goodput_agent.collect.slurm import _remote_kernel_log
    from goodput_agent.metrics.source import TimeWindow
    from goodput_agent.sources.kernel_log import job_window
    from tests.servers.ray_cluster import node_id_here

    nodes = {n["NodeManagerAddress"]: n["NodeID"] for n in ray.nodes() if n["Alive"]}
    worker = ray_cluster.worker_ip
    assert runner.run_on(["gpu-07", worker], node_id_here) == nodes[worker]
    assert runner.run_on(["gpu-07"], node_id_here) is None  # no such node: not run anywhere
    window: TimeWindow = job_window(None, None)
    with BundleWriter(tmp_path / "b", {"slurm_job": "1"}, window) as w:
        _remote_kernel_log(w, "gpu-07", ["gpu-07", worker], window, runner.run_on)
        _remote_kernel_log(w, "gpu-08", ["gpu-08"], window, runner.run_on)
    errors = {e.what: e for e in w.manifest.errors}
    assert errors["kernel log of gpu-08"].kind == "unreachable"
    # gpu-07 was read there: its log, or why that node could not read it (never unreachable)
    got = list((tmp_path / "b" / "nodes" / "gpu-07").glob("*")) if \
        (tmp_path / "b" / "nodes" / "gpu-07").exists() else []
    assert got or errors["kernel log of gpu-07"].kind in ("unreadable", "empty")
