"""The real-world corpus in evals/realworld (every family folder) and ../shared/realworld: every
excerpt is read as a one-file bundle without error, and where the excerpt's own text decides the
class, the verdict matches the thread's label on at least 95 % of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from tests.conftest import SHARED
from tests.test_realworld import HANG_BY_OWN_WORK, NOT_DECISIVE

CORPUS = Path(__file__).resolve().parents[2] / "evals" / "realworld"
# This helper's families (the node/process side); other folders hold other families.
NODE_SIDE_FAMILIES = ("kernel", "nccl", "pytorch", "oom", "healthy")
SIDECAR_KEYS = {"file", "label", "source", "root_cause", "decisive"}

# The threads' rough labels on the product's taxonomy. A hang is what a collective timeout
# with no cause in the text shows; a healthy control must give no failure verdict at all.
LABEL_TO_CATEGORIES = {"gpu_hardware": {"gpu_hardware"}, "gpu_oom": {"gpu_oom"},
                       "host_oom": {"host_oom"}, "application_error": {"application_error"},
                       "network": {"network_fault"}, "timeout": {"hang"},
                       "healthy": {"unknown"}}


def _sidecars(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/*.json") if p.parent.name != "slurm-json")


def _artifact(side: Path) -> Path:
    return next(p for p in (side.with_suffix(".log"), side.with_suffix(".prom"),
                            side.with_suffix(".txt")) if p.exists())


def _decisive(side: Path, meta: dict) -> bool:
    # ../shared keeps its non-decisive list beside its own test, not in the sidecars
    return (bool(meta.get("decisive", True)) and side.stem not in NOT_DECISIVE
            and meta["label"] in LABEL_TO_CATEGORIES)


def _allowed(side: Path, meta: dict) -> set[str]:
    extra = {"hang"} if side.stem in HANG_BY_OWN_WORK else set()
    return LABEL_TO_CATEGORIES[meta["label"]] | extra


def _verdicts(sides: list[Path], tmp: Path) -> list[tuple[Path, dict, str]]:
    out = []
    with Ledger(tmp / "ledger.duckdb") as ledger:
        for i, side in enumerate(sides):
            meta = json.loads(side.read_text())
            log = _artifact(side)
            bundle = tmp / f"b{i}"
            bundle.mkdir()
            shutil.copy(log, bundle / log.name)  # a one-file bundle in tmp, not in the repo
            report = investigate_bundle(bundle, ledger)
            for ev in report.root_cause.evidence:
                assert ev.source == log.name and ev.excerpt, side
            out.append((side, meta, report.root_cause.category))
    return out


def test_every_sidecar_is_complete_and_names_its_source() -> None:
    for side in _sidecars(CORPUS):
        meta = json.loads(side.read_text())
        assert meta.keys() >= SIDECAR_KEYS, side
        assert meta["source"].startswith("https://github.com/"), side
        assert _artifact(side).read_text().strip(), side
        assert meta["decisive"] or meta.get("why_not_decisive"), side


def test_node_side_families_hold_at_least_100_excerpts() -> None:
    count = sum(len(list((CORPUS / f).glob("*.json"))) for f in NODE_SIDE_FAMILIES)
    assert count >= 100


def test_decisive_labels_match_the_verdict(tmp_path: Path) -> None:
    # ../shared joins when it is beside the checkout (CI); the repository's corpus always runs
    shared = SHARED / "realworld"
    sides = _sidecars(CORPUS) + (_sidecars(shared) if shared.is_dir() else [])
    results = [(s, m, c) for s, m, c in _verdicts(sides, tmp_path) if _decisive(s, m)]
    misses = [(f"{s.parent.name}/{s.stem}", m["label"], c) for s, m, c in results
              if c not in _allowed(s, m)]
    for miss in misses:
        print("mismatch:", *miss)
    assert len(results) >= 100
    assert len(misses) <= 0.05 * len(results), misses


@pytest.mark.parametrize("family", ["healthy"])
def test_healthy_controls_never_give_a_failure_verdict(tmp_path: Path, family: str) -> None:
    sides = sorted((CORPUS / family).glob("*.json"))
    assert sides
    for side, _, category in _verdicts(sides, tmp_path):
        assert category == "unknown", side.stem
