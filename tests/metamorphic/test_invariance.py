"""Metamorphic tests: every shipped case and the demo, changed in ways that must not move the
verdict (category, node, rank), gives the verdict its unchanged bundle gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from goodput_agent.ledger import Ledger
from tests.metamorphic.variants import (
    ORIGINAL_CASES,
    ORIGINALS,
    VARIANTS,
    Case,
    T,
    Verdict,
    apply_variant,
    comparable,
    copy_case,
    shipped_cases,
    verdict,
)

CASES = shipped_cases()


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    led = Ledger(tmp_path_factory.mktemp("ledger") / "metamorphic.duckdb")
    yield led
    led.close()


@pytest.fixture(scope="module")
def originals() -> dict[str, Verdict]:
    return ORIGINALS  # the summary (conftest) reports how many match their answer keys


def original_verdict(case: Case, ledger: Ledger, originals: dict[str, Verdict],
                     tmp: Path) -> Verdict:
    key = f"{case.suite}/{case.name}"
    if key not in originals:
        originals[key] = verdict(case.path, ledger, tmp / "pictures")
        ORIGINAL_CASES[key] = case
    return originals[key]


def test_every_shipped_suite_and_the_demo_are_covered() -> None:
    suites = {c.suite for c in CASES}
    assert suites == {"failure", "slowdown", "latency", "demo"}
    assert sum(c.suite == "failure" for c in CASES) >= 48


PAIRS = [pytest.param(case, variant, id=f"{case.suite}-{case.name}-{variant}")
         for case in CASES for variant, names in VARIANTS.items()
         if any(case.kind in T[name].kinds for name in names)]


@pytest.mark.parametrize(("case", "variant"), PAIRS)
def test_verdict_does_not_move(case: Case, variant: str, ledger: Ledger,
                               originals: dict[str, Verdict], tmp_path: Path) -> None:
    before = original_verdict(case, ledger, originals, tmp_path)
    bundle, applied = apply_variant(case, variant, copy_case(case, tmp_path / "copy"), before[1])
    assert applied, f"{case.suite}/{case.name}: no transform of variant {variant} applies"
    after = verdict(bundle, ledger, tmp_path / "pictures")
    short = any(T[name].introduces_fqdn for name in applied)
    assert comparable(after, short) == comparable(before, short), (
        f"{case.suite}/{case.name}: variant {variant} ({' + '.join(applied)}) moved the verdict "
        f"(category, node, rank): expected {before}, got {after}")
