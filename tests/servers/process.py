"""A server process for a test: started with its output in a log file, ready when a URL of it
answers 200, stopped (terminate, then kill) when the test is done."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

READY_TIMEOUT_S = 30.0


@contextmanager
def serving(argv: Sequence[str], ready_url: str, log_path: Path, name: str,
            ready_timeout_s: float = READY_TIMEOUT_S,
            **popen: object) -> Iterator[subprocess.Popen]:
    """Start `argv`, wait until `ready_url` answers 200, yield the process; stop it after."""
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT, **popen)
    try:
        _wait_ready(ready_url, proc, log_path, name, ready_timeout_s)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, name: str,
                timeout_s: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited ({proc.returncode}): "
                               f"{log.read_text(errors='replace')[-500:]}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{name} at {url} was not ready within {timeout_s:g} s")
