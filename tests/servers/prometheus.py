"""A real Prometheus for tests: Debian's `prometheus` package (installed here when absent),
series backfilled with `promtool tsdb create-blocks-from openmetrics` into a fresh data dir
before the server starts (blocks added to a running server take ~20 s to appear), then the
server on 127.0.0.1 at a free port, stopped when the test is done.

Nothing here reaches beyond loopback except apt-get, on a machine that lacks the package.
"""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

PACKAGE = "prometheus"
READY_TIMEOUT_S = 30.0


class PrometheusUnavailable(RuntimeError):
    """The package is absent and this user may not install it (not root, no sudo). A failing
    install where installing is allowed is a RuntimeError: that fails the tests."""


def _installer() -> list[str] | None:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"],
                                               capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    return None


def ensure_prometheus() -> tuple[Path, Path]:
    """Paths of `prometheus` and `promtool`, installing Debian's package when they are absent."""
    found = shutil.which("prometheus"), shutil.which("promtool")
    if all(found):
        return Path(found[0]), Path(found[1])  # type: ignore[arg-type]
    prefix = _installer()
    if prefix is None or not shutil.which("apt-get"):
        raise PrometheusUnavailable(
            "prometheus is not installed and this user cannot install it "
            "(run as root, or: sudo apt-get install prometheus)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*prefix, "apt-get", "install", "-y", "-q", "--no-install-recommends", PACKAGE]
    if subprocess.run(install, capture_output=True, env=env, timeout=600).returncode != 0:
        subprocess.run([*prefix, "apt-get", "update", "-q"], capture_output=True, env=env,
                       timeout=600, check=False)
        proc = subprocess.run(install, capture_output=True, text=True, env=env, timeout=600)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"apt-get install {PACKAGE} failed: {tail[0]}")
    found = shutil.which("prometheus"), shutil.which("promtool")
    if not all(found):
        raise RuntimeError(f"apt-get installed {PACKAGE} but it has no binaries")
    return Path(found[0]), Path(found[1])  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
