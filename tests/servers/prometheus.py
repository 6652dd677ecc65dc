"""A real Prometheus for tests: Debian's `prometheus` package (installed here when absent),
series backfilled with `promtool tsdb create-blocks-from openmetrics` into a fresh data dir
before the server starts (blocks added to a running server take ~20 s to appear), then the
server on 127.0.0.1 at a free port, stopped when the test is done.

Nothing here reaches beyond loopback except apt-get, on a machine that lacks the package.
"""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.servers.debian import PackageUnavailable, ensure_packages, free_port
from tests.servers.process import serving

PACKAGE = "prometheus"


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
                       flags: Sequence[str] = (), rule_files: Sequence[Path] = (),
                       evaluation_interval: str = "1m") -> Iterator[str]:
    """A Prometheus over `files`, serving on loopback; yields its URL. `rule_files`:
    alerting/recording rules it evaluates every `evaluation_interval`."""
    prometheus, promtool = ensure_prometheus()
    data = workdir / "data"
    backfill(promtool, files, data)
    config = workdir / "prometheus.yml"
    rules = "".join(f"  - {json.dumps(str(p))}\n" for p in rule_files)
    config.write_text(f"global:\n  scrape_interval: 1h\n  evaluation_interval: "
                      f"{evaluation_interval}\nscrape_configs: []\n"
                      + (f"rule_files:\n{rules}" if rules else ""))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(prometheus), f"--config.file={config}", f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            # backfilled samples are old: keep them
            "--storage.tsdb.retention.time=100y", *flags]
    with serving(argv, f"{url}/-/ready", workdir / "prometheus.log", "prometheus"):
        yield url


@contextmanager
def prometheus_over_text(workdir: Path, openmetrics: str) -> Iterator[str]:
    """A Prometheus serving the series of `openmetrics` (OpenMetrics text, backfilled); the
    test is skipped where the package is absent and cannot be installed."""
    import pytest

    try:
        ensure_prometheus()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))
    (workdir / "prom").mkdir(parents=True, exist_ok=True)
    series = workdir / "series.om"
    series.write_text(openmetrics)
    with running_prometheus(workdir / "prom", [series]) as url:
        yield url


@contextmanager
def mute_server() -> Iterator[str]:
    """A loopback port that accepts connections and never answers (a hung server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
