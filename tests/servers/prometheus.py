"""A real Prometheus for tests: Debian's `prometheus` package (installed here when absent),
series backfilled with `promtool tsdb create-blocks-from openmetrics` into a fresh data dir
before the server starts (blocks added to a running server take ~20 s to appear), then the
server on 127.0.0.1 at a free port, stopped when the test is done.

Nothing here reaches beyond loopback except apt-get, on a machine that lacks the package.
"""

from __future__ import annotations

import gzip
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.servers.debian import PackageUnavailable, ensure_packages, free_port

PACKAGE = "prometheus"
READY_TIMEOUT_S = 30.0


PrometheusUnavailable = PackageUnavailable


def ensure_prometheus() -> tuple[Path, Path]:
    """Paths of `prometheus` and `promtool`, installing Debian's package when they are absent."""
    found = ensure_packages([PACKAGE], ["prometheus", "promtool"])
    return found["prometheus"], found["promtool"]


def backfill(promtool: Path, files: Sequence[Path], data_dir: Path) -> None:
    """OpenMetrics files (optionally gzipped, timestamps in seconds, sorted) into TSDB blocks."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for k, path in enumerate(files):
        plain = data_dir.parent / f"backfill-{k}.om"
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        proc = subprocess.run([str(promtool), "tsdb", "create-blocks-from", "openmetrics",
                               str(plain), str(data_dir)], capture_output=True, text=True,
                              timeout=300)
        plain.unlink()
        if proc.returncode != 0:
            raise RuntimeError(f"promtool could not backfill {path}: "
                               f"{(proc.stderr or proc.stdout).strip()[-300:]}")


@contextmanager
def running_prometheus(workdir: Path, files: Sequence[Path] = (),
                       flags: Sequence[str] = ()) -> Iterator[str]:
    """A Prometheus over `files`, serving on loopback; yields its URL."""
    prometheus, promtool = ensure_prometheus()
    data = workdir / "data"
    backfill(promtool, files, data)
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(workdir / "prometheus.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(prometheus), f"--config.file={config}", f"--storage.tsdb.path={data}",
         f"--web.listen-address=127.0.0.1:{port}",
         # backfilled samples are old: keep them
         "--storage.tsdb.retention.time=100y", *flags],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(url, proc, workdir / "prometheus.log")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited ({proc.returncode}): "
                               f"{log.read_text(errors='replace')[-500:]}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"prometheus at {url} was not ready within {READY_TIMEOUT_S:g} s")


@contextmanager
def mute_server() -> Iterator[str]:
    """A loopback port that accepts connections and never answers (a hung server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
