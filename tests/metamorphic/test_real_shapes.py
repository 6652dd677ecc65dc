"""Issue 24's classes under the changes a real paste goes through: the verdict does not move,
or it falls to `unknown`, or it keeps its class at a confidence of at most 0.5 with the place it
can no longer see left open; it never moves to another confident class."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from goodput_agent.analysis.failure.ceilings import OWNERS_TWICE, UNCORROBORATED
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.report import Report
from tests.metamorphic.real_shapes import CASES, TRANSFORMS

EXPECTED = {  # what each unchanged bundle must say: the classes the shapes stand for
    "dataloader_killed": ("host_oom", "gpu-07"), "shm_bus_error": ("host_oom", None),
    "gpu_lost": ("gpu_hardware", "gpu-02"), "time_limit": ("time_limit", None),
    "silent_rank_hang": ("hang", "node0"), "pods_table": ("host_oom", None),
    "sglang_retract": ("kv_cache_pressure", None),
}
HEDGED = 0.5
NO_KERNEL_CEILING = {"dataloader_killed": UNCORROBORATED, "gpu_lost": OWNERS_TWICE}


def _kept(after: object, before: object) -> bool:
    return after is None or before is None or after == before


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    with Ledger(tmp_path_factory.mktemp("ledger") / "shapes.duckdb") as led:
        yield led


def _run(root: Path, ledger: Ledger) -> Report:
    return investigate_bundle(root, ledger, pictures_dir=root.parent / "pictures")


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_shape_gives_its_class(case: str, ledger: Ledger, tmp_path: Path) -> None:
    rc = _run(CASES[case](tmp_path / "b"), ledger).root_cause
    assert (rc.category, rc.node) == EXPECTED[case], rc.summary


def test_the_silent_rank_is_named_only_when_every_rank_is_heard(ledger: Ledger,
                                                                tmp_path: Path) -> None:
    rc = _run(CASES["silent_rank_hang"](tmp_path / "b"), ledger).root_cause
    assert rc.rank == 3 and rc.confidence > HEDGED


@pytest.mark.parametrize(("case", "change"),
                         [(c, t) for c in sorted(CASES) for t in sorted(TRANSFORMS)])
def test_the_verdict_holds_or_falls_to_unknown(case: str, change: str, ledger: Ledger,
                                               tmp_path: Path) -> None:
    before = _run(CASES[case](tmp_path / "a"), ledger).root_cause
    after_report = _run(TRANSFORMS[change](CASES[case](tmp_path / "b")), ledger)
    after = after_report.root_cause
    # the class holds; a place may be lost (None) or found where there was none, never moved
    kept = after.category == before.category and _kept(after.node, before.node) and \
        _kept(after.rank, before.rank)
    assert kept or after.category == "unknown", (
        f"{case} + {change}: {before.category}/{before.node}/{before.rank} became "
        f"{after.category}/{after.node}/{after.rank} at {after.confidence}: {after.summary}")
    if change == "no_kernel_log" and case in NO_KERNEL_CEILING:
        # the kernel's own record gone: never surer than with it, and a bystander's report
        # (a DataLoader's SIGKILL) is not promised beyond one artifact, an owner's (nvidia-smi,
        # a rank's CUDA error agreeing) not beyond what two such records reach
        assert after.confidence <= min(before.confidence, NO_KERNEL_CEILING[case])
    if change == "one_rank_of_eight" and case == "silent_rank_hang":
        # rank 3's silence means nothing once the other ranks' output is gone
        assert after.rank is None and after.confidence <= HEDGED
        assert any("not in the bundle" in u for u in after_report.unknowns)
    if change == "preamble_200k":  # a long log is never unread for where its line sits
        assert not after_report.unread
