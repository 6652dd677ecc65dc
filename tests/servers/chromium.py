"""A real browser for tests: Debian's `chromium` (installed here when absent), driven by
Playwright through `executable_path` — Playwright's own browser download is never used
(`playwright install` cannot reach its CDN here, and the tests must not download at run time).

Also `running_goodput_serve`: the product's own `goodput serve` started as a subprocess on a
free loopback port, stopped when the test is done.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.servers.debian import PackageUnavailable, ensure_packages, free_port

PACKAGE = "chromium"
BINARY = "/usr/bin/chromium"
ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage")
READY_TIMEOUT_S = 30.0

ChromiumUnavailable = PackageUnavailable


def ensure_chromium() -> Path:
    """The path of Debian's chromium, installing the package when it is absent."""
    return ensure_packages([PACKAGE], [BINARY])[BINARY]


@contextmanager
def launched_browser() -> Iterator[object]:
    """A headless chromium under Playwright (sync API); yields the Browser."""
    from playwright.sync_api import sync_playwright

    exe = ensure_chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(exe), headless=True, args=list(ARGS))
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def running_goodput_serve(ledger: Path, workdir: Path, extra: Sequence[str] = (),
                          env: dict[str, str] | None = None) -> Iterator[str]:
    """`goodput serve --ledger LEDGER` on 127.0.0.1 at a free port; yields its base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = workdir / "serve.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "goodput_agent.cli", "serve", "--ledger", str(ledger),
         "--port", str(port), *extra],
        stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env={**os.environ, **(env or {})})
    try:
        _wait_ready(url, proc, log_path)
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
            raise RuntimeError(f"goodput serve exited ({proc.returncode}): "
                               f"{log.read_text(errors='replace')[-500:]}")
        try:
            with urllib.request.urlopen(f"{url}/static/style.css", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"goodput serve at {url} was not ready within {READY_TIMEOUT_S:g} s")
