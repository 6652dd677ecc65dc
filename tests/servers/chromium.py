"""A real browser for tests: Debian's `chromium` (installed here when absent), driven by
Playwright through `executable_path` — Playwright's own browser download is never used
(`playwright install` cannot reach its CDN here, and the tests must not download at run time).

Also `running_goodput_serve`: the product's own `goodput serve` started as a subprocess on a
free loopback port, stopped when the test is done.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.servers.debian import PackageUnavailable, ensure_packages, free_port
from tests.servers.process import serving

PACKAGE = "chromium"
BINARY = "/usr/bin/chromium"
ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage")

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
    argv = [sys.executable, "-m", "goodput_agent.cli", "serve", "--ledger", str(ledger),
            "--port", str(port), *extra]
    with serving(argv, f"{url}/static/style.css", workdir / "serve.log", "goodput serve",
                 cwd=workdir, env={**os.environ, **(env or {})}):
        yield url
