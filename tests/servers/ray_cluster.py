"""A real two-node Ray cluster on this host for the tests: a head node on 127.0.0.1 and a worker
node on 127.0.0.2 (its own raylet and object store), one CPU each. Each node is a
`ray start --block` process of ours, stopped by its id when the session ends (never `ray stop`,
which would stop every Ray on the host). Skips only when Ray is not installed."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKER_IP = "127.0.0.2"
READY_TIMEOUT_S = 90.0
OBJECT_STORE_BYTES = 80 * 1024 * 1024


@dataclass
class RayCluster:
    address: str  # 127.0.0.1:<port>
    worker_ip: str
    temp_dir: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_cli() -> str:
    found = Path(sys.executable).with_name("ray")
    return str(found) if found.exists() else (shutil.which("ray") or "ray")


def _start(args: list[str], log: Path) -> subprocess.Popen:
    # the tests' own modules (a slow task for the kill test) importable by the workers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "RAY_USAGE_STATS_ENABLED": "0"}
    with open(log, "wb") as out:
        return subprocess.Popen([_ray_cli(), "start", "--block", "--num-cpus", "1",
                                 "--object-store-memory", str(OBJECT_STORE_BYTES),
                                 "--disable-usage-stats", *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _alive_nodes(address: str) -> int:
    probe = (f"import ray; ray.init(address={address!r}, logging_level='ERROR', "
             "log_to_driver=False); print(sum(1 for n in ray.nodes() if n['Alive']))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=False)
    return int(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and \
        done.stdout.strip() else 0


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to `ray start --block` (ours) stops the node's processes it started."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: only what it started
            proc.wait()


@contextmanager
def two_node_cluster(work: Path) -> Iterator[RayCluster]:
    """A head node and a worker node on this host, one CPU each, stopped when done (the
    benchmarks/ray_scale.py cluster too); `work` gets their logs."""
    temp = Path(f"/tmp/goodput-ray-{os.getpid()}")  # Ray's socket paths must stay short
    port = free_port()
    address = f"127.0.0.1:{port}"
    procs = [_start(["--head", "--port", str(port), "--node-ip-address", "127.0.0.1",
                     "--include-dashboard=false", "--temp-dir", str(temp)], work / "head.log")]
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while _alive_nodes(address) < 1:
            if procs[0].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray head did not start: {(work / 'head.log').read_text()}")
            time.sleep(1)
        procs.append(_start(["--address", address, "--node-ip-address", WORKER_IP],
                            work / "worker.log"))
        while _alive_nodes(address) < 2:
            if procs[1].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ray worker node did not join: "
                                   f"{(work / 'worker.log').read_text()}")
            time.sleep(1)
        yield RayCluster(address=address, worker_ip=WORKER_IP, temp_dir=temp)
    finally:
        for proc in reversed(procs):
            _stop(proc)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'goodput[ray]')")
    with two_node_cluster(tmp_path_factory.mktemp("ray")) as cluster:
        yield cluster


def slow_once(marker: str, path: str, rel_path: str | None, node_hint: str | None) -> object:
    """`digest_trace`, but the first attempt writes its process id to `marker` and sleeps:
    the kill test kills that worker, and only a retry can return."""
    from goodput_agent.analysis.slowdown.rank_digest import digest_trace

    m = Path(marker)
    if not m.exists():
        m.write_text(str(os.getpid()))
        time.sleep(300)
    return digest_trace(path, rel_path, node_hint)


def node_id_here() -> str:
    """The Ray node this task runs on."""
    import ray

    return ray.get_runtime_context().get_node_id()
