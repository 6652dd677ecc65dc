"""The test Slurm cluster leaves nothing behind: its teardown ends the step daemons and the
jobs' own processes with the daemons, and a run cut short (SIGKILL: no teardown at all) is
cleared by the next cluster's start, while a cluster whose test run lives is left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers.slurm import (
    _processes_of,
    _reap_orphans,
    _slurm_conf_of,
    cluster_with_a_time_limit_job,
)

SLEEPER = "#!/bin/bash\nsleep 600\n"

# a test run holding a cluster with a running job; killed (SIGKILL) before its teardown
CUT_SHORT = """
import sys, time
from pathlib import Path
from tests.servers.slurm import running_slurm
with running_slurm(Path(sys.argv[1])) as c:
    c.wait_state(c.submit("#!/bin/bash\\nsleep 600\\n", name="left"), "RUNNING")
    Path(sys.argv[2]).write_text(c.env["SLURM_CONF"])
    time.sleep(600)
"""


def _cmdlines_naming(root: Path) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if str(root).encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def test_teardown_ends_step_daemons_and_jobs(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("ends")
    with cluster_with_a_time_limit_job(root) as cluster:
        cluster.wait_state(cluster.submit(SLEEPER, "-w", "gpu-node-02", name="sleeper"),
                           "RUNNING")
        conf = Path(cluster.env["SLURM_CONF"])
        # daemons, a step daemon and a sleep for each of two jobs
        assert len([p for p in _processes_of(conf) if _slurm_conf_of(p)[1]]) >= 4
    assert _processes_of(conf) == [] and _cmdlines_naming(root) == []


def test_a_run_cut_short_is_cleared_by_the_next_start(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    if os.geteuid() != 0:
        pytest.skip("a test Slurm cluster runs its daemons as root")
    root = tmp_path_factory.mktemp("cut")  # short: the step daemons' socket paths are
    marker = tmp_path_factory.mktemp("marker") / "conf"
    run = subprocess.Popen([sys.executable, "-c", CUT_SHORT, str(root), str(marker)],
                           cwd=Path(__file__).resolve().parents[2], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):
            if marker.exists() and marker.read_text():
                break
            try:
                run.wait(timeout=0.1)
                err = run.stderr.read() if run.stderr else ""
                pytest.fail(f"the cluster did not start: {err[-500:]}")
            except subprocess.TimeoutExpired:
                continue
    finally:
        run.send_signal(signal.SIGKILL)  # no teardown runs
        run.wait()
    conf = Path(marker.read_text())
    assert _processes_of(conf), "the killed run's daemons and job outlive it"
    # the next cluster's start clears them
    with cluster_with_a_time_limit_job(tmp_path_factory.mktemp("live")) as live:
        assert _processes_of(conf) == [] and _cmdlines_naming(root) == []
        assert len(_processes_of(Path(live.env["SLURM_CONF"]))) >= 7  # itself left alone
        _reap_orphans()  # again, with its own test run alive: nothing of it is touched
        assert len(_processes_of(Path(live.env["SLURM_CONF"]))) >= 7
