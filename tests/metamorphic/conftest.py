"""After the metamorphic tests: how many unchanged cases match their answer keys (context for
the invariance results; the tests compare each variant with its own unchanged case)."""

from __future__ import annotations

import pytest

from tests.metamorphic.variants import ORIGINAL_CASES, ORIGINALS, matches_answer_key


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    scored = [(key, matches_answer_key(ORIGINAL_CASES[key], v)) for key, v in ORIGINALS.items()]
    keyed = [(key, ok) for key, ok in scored if ok is not None]
    if not keyed:
        return
    misses = [key for key, ok in keyed if not ok]
    terminalreporter.write_line(
        f"metamorphic: {len(keyed) - len(misses)}/{len(keyed)} unchanged cases match their "
        f"expected.json" + (f" (not: {', '.join(misses)})" if misses else ""))
