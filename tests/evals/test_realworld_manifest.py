"""The real-world corpus manifest (evals/realworld/corpus.jsonl): our own metadata for public
excerpts whose text is read in place from ../shared/realworld-corpus/, never kept here.

GOODPUT_CORPUS_EXTRA names more copies of the text (os.pathsep-separated folders laid out like
../shared/realworld-corpus/): new entries are read there before they are placed. An entry is read
from the first copy that holds all its files. GOODPUT_CORPUS_SKIP_HOLDOUT=1 leaves out the
entries evals/realworld/holdout_i24.txt sets aside (so that fixing never looks at them).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from evals.corpus_manifest import CorpusEntry, load
from evals.realworld_holdout import held_out_ids
from evals.realworld_score import LABELS, UNDECIDABLE_LABELS, Score, present
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

COPY = "realworld-corpus"


def test_every_entry_validates_with_a_unique_id_a_source_and_a_known_label() -> None:
    entries = load()
    assert len({e.id for e in entries}) == len(entries)
    for e in entries:
        assert e.label in LABELS, e.id
        assert e.root_cause and e.files, e.id
        assert e.decisive or e.why_not_decisive, e.id
        assert not (e.decisive and e.label in UNDECIDABLE_LABELS), e.id
        for f in e.files:
            assert f.source.startswith("https://"), e.id
            assert len(f.sha256) == 64 and f.bytes > 0 and f.lines > 0, e.id


def test_the_corpus_keeps_its_floors() -> None:
    entries = load()
    incidents = [e for e in entries if e.is_incident]
    assert len(entries) - len(incidents) >= 237
    assert len(incidents) >= 24
    assert all(len(e.files) >= 2 for e in incidents)


def test_the_held_out_third_is_a_third_of_issue_24s_entries() -> None:
    ids = {e.id for e in load()}
    held = held_out_ids()
    assert held <= ids
    assert len(held) == 81 // 3


def _copies() -> list[Path]:
    from tests.conftest import SHARED

    extra = [Path(p) for p in os.environ.get("GOODPUT_CORPUS_EXTRA", "").split(os.pathsep) if p]
    return [SHARED / COPY, *extra]


def _placed() -> list[tuple[CorpusEntry, Path]]:
    roots = _copies()
    skip = held_out_ids() if os.environ.get("GOODPUT_CORPUS_SKIP_HOLDOUT") == "1" else set()
    out = []
    for entry in load():
        if entry.id in skip:
            continue
        base = next((b for r in roots if (b := present(r, entry)) is not None), None)
        if base is not None:
            out.append((entry, base))
    return out


def test_placed_copy_matches_the_manifest_and_decisive_labels(tmp_path: Path) -> None:
    # not the shared_dir fixture: ../shared may be there without the corpus copy
    placed = _placed()
    if not placed:
        pytest.skip(f"no corpus text under {', '.join(map(str, _copies()))} "
                    "(the steering side places it from the sources)")
    score = Score()
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for i, (entry, base) in enumerate(placed):
            bundle = tmp_path / f"b{i}"
            for f in entry.files:
                text = (base / f.path).read_bytes()
                assert hashlib.sha256(text).hexdigest() == f.sha256, f"{entry.id}/{f.path}"
                (bundle / f.path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(base / f.path, bundle / f.path)  # a bundle in tmp, not the repo
            report = investigate_bundle(bundle, ledger)
            for unread in report.unread:
                assert report.unread_reasons.get(unread), f"{entry.id}/{unread}: no reason"
            score.judge(entry, report)
    print(f"\n{len(placed)} entries placed; decisive {score.checked - len(score.mismatches)}"
          f"/{score.checked}", *score.mismatches, sep="\n  ")
    assert score.rate >= 0.95 or not score.checked, "\n".join(score.mismatches)
