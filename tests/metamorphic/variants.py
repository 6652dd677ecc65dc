"""The shipped cases, the transforms composed into a few variants per case, and a verdict.

Running every transform alone on every case would take too long; each variant composes several
compatible transforms, and together a case's variants meet every transform that applies to it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from goodput_agent.analysis.failure.observations import short_name
from goodput_agent.evals.scorer import ANSWER_KEYS, SUITES
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from tests.metamorphic.clock_transforms import add_decoy_event, can_add_decoy, shift_time_zone
from tests.metamorphic.rank_logs import (
    has_combined_log,
    has_per_rank_logs,
    merge_rank_logs,
    split_combined_logs,
)
from tests.metamorphic.transforms import (
    CaseInfo,
    Transform,
    add_extra_files,
    has_hosts,
    pack_tar_gz,
    qualify_hosts,
    rename_and_nest,
    reword_question,
    shuffle_order,
    to_crlf,
    toggle_gzip,
    wrap_in_folder,
)

EVALS = Path(__file__).resolve().parents[2] / "evals"
DEMO = Path(__file__).resolve().parents[2] / "goodput_agent" / "demo" / "bundle"

T = {t.name: t for t in (
    Transform("fqdn", qualify_hosts, has_hosts, frozenset({"failure", "slowdown"}),
              introduces_fqdn=True),
    Transform("rank-order", shuffle_order, kinds=frozenset({"failure", "slowdown"})),
    Transform("split-combined-log", split_combined_logs, has_combined_log,
              frozenset({"failure"})),
    Transform("merge-rank-logs", merge_rank_logs, has_per_rank_logs, frozenset({"failure"})),
    Transform("time-zone", shift_time_zone),
    Transform("decoy-event", add_decoy_event, can_add_decoy, frozenset({"failure"})),
    Transform("reworded-question", reword_question),
    Transform("extra-files", add_extra_files),
    Transform("crlf-bom", to_crlf),
    Transform("gzip", toggle_gzip),
    Transform("rename-nest", rename_and_nest),
    Transform("wrap-in-folder", wrap_in_folder),
    Transform("tar-gz", pack_tar_gz),
)}

# in the order they run: content first, folder layout after, the archive last
VARIANTS: dict[str, tuple[str, ...]] = {
    "layout": ("fqdn", "rank-order", "split-combined-log", "extra-files", "crlf-bom",
               "rename-nest", "wrap-in-folder"),
    "packaging": ("merge-rank-logs", "time-zone", "gzip", "tar-gz"),
    "decoy": ("decoy-event",),
    "question": ("reworded-question",),
}


@dataclass(frozen=True)
class Case:
    suite: str
    path: Path

    @property
    def name(self) -> str:
        return self.path.name if self.path != DEMO else "demo"

    @property
    def kind(self) -> str:
        key = self.path / "expected.json"
        return json.loads(key.read_text()).get("kind", "failure") if key.exists() else "failure"

    @property
    def expected(self) -> dict | None:
        key = self.path / "expected.json"
        return json.loads(key.read_text()) if key.exists() else None


def shipped_cases() -> list[Case]:
    cases = [Case(suite, p.parent) for suite, folder in SUITES.items()
             for p in sorted((EVALS / folder).glob("*/expected.json"))]
    return [*cases, Case("demo", DEMO)]


Verdict = tuple[str, str | None, int | None]
ORIGINALS: dict[str, Verdict] = {}  # "suite/case" -> the unchanged bundle's verdict
ORIGINAL_CASES: dict[str, Case] = {}


def matches_answer_key(case: Case, v: Verdict) -> bool | None:
    """As `goodput eval` scores: category, node by short name, rank where the key names one
    (None: the case has no answer key, as the demo)."""
    key = case.expected
    if key is None:
        return None
    node_ok = (v[1] is None and key.get("node") is None) or (
        v[1] is not None and key.get("node") is not None
        and short_name(v[1]) == short_name(key["node"]))
    return v[0] == key["category"] and node_ok and (key.get("rank") is None or
                                                    v[2] == key["rank"])


def verdict(bundle: Path, ledger: Ledger, pictures: Path) -> Verdict:
    """(category, node, rank), investigated as `goodput eval` does: the answer key unseen."""
    rc = investigate_bundle(bundle, ledger, ignore=ANSWER_KEYS, pictures_dir=pictures).root_cause
    return rc.category, rc.node, rc.rank


def comparable(v: Verdict, short: bool) -> Verdict:
    return (v[0], short_name(v[1]) if short and v[1] else v[1], v[2])


def copy_case(case: Case, into: Path) -> Path:
    root = into / case.name
    shutil.copytree(case.path, root, ignore=shutil.ignore_patterns(*ANSWER_KEYS))
    return root


def apply_variant(case: Case, variant: str, root: Path, node: str | None) -> tuple[Path, list[str]]:
    """The variant's usable transforms applied to the copy at `root`: the bundle's path now,
    and the names of the transforms that were applied."""
    info = CaseInfo(case.name, case.kind, node)
    applied = []
    for name in VARIANTS[variant]:
        transform = T[name]
        if transform.usable(root, info):
            root = transform.apply(root, info)
            applied.append(name)
    return root, applied
