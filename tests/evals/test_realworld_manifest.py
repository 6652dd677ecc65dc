"""The real-world corpus manifest (evals/realworld/corpus.jsonl): our own metadata for public
excerpts whose text is read in place from ../shared/realworld-corpus/, never kept here."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from evals.corpus_manifest import CorpusEntry, load
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from tests.evals.realworld_corpus import LABELS, UNDECIDABLE_LABELS, Score

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
    assert len(entries) - len(incidents) >= 150
    assert len(incidents) >= 20
    assert all(len(e.files) >= 2 for e in incidents)


def _present(root: Path, entry: CorpusEntry) -> Path | None:
    """The entry's folder under the placed copy when every file of it is there."""
    base = root / entry.family / (entry.id if entry.is_incident else "")
    return base if all((base / f.path).is_file() for f in entry.files) else None


def test_placed_copy_matches_the_manifest_and_decisive_labels(tmp_path: Path) -> None:
    # not the shared_dir fixture: ../shared may be there without the corpus copy
    from tests.conftest import SHARED

    root = SHARED / COPY
    placed = [(e, base) for e in load() if (base := _present(root, e)) is not None]
    if not placed:
        pytest.skip(f"no corpus text under {root} (the steering side places it from the sources)")
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
