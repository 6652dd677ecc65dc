"""The single real excerpts of evals/realworld/{slurm,k8s,vllm,frameworks}: each kept verbatim
with the public source it came from; each is read as a one-file bundle without error, and
where what the excerpt shows decides the class, the verdict matches the thread's resolution."""

from __future__ import annotations

import shutil
from pathlib import Path

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from tests.evals.sched_corpus import Score, check_label_fields, single_entries


def test_every_excerpt_has_its_source_and_a_well_formed_label() -> None:
    entries = single_entries()
    assert len(entries) >= 50
    problems = []
    for path, meta in entries:
        if not path.is_file() or path.stat().st_size == 0:
            problems.append(f"{path.name}: missing or empty")
        if not meta.get("source", "").startswith("https://github.com/"):
            problems.append(f"{path.name}: no public source URL")
        problems += check_label_fields(path.name, meta)
    assert not problems, "\n".join(problems)


def test_every_excerpt_reads_and_decisive_labels_match(tmp_path: Path) -> None:
    score = Score()
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for path, meta in single_entries():
            bundle = tmp_path / "b" / path.stem
            bundle.mkdir(parents=True)
            shutil.copy(path, bundle / path.name)  # a one-file bundle in tmp, not in the repo
            report = investigate_bundle(bundle, ledger)
            for ev in report.root_cause.evidence:
                assert ev.source == path.name and ev.excerpt
            for unread in report.unread:
                assert report.unread_reasons.get(unread), f"{path.name}: unread without a reason"
            score.judge(path.stem, meta, report)
    print(f"\ndecisive single excerpts: {score.checked - len(score.mismatches)}/{score.checked}")
    for line in score.mismatches:
        print("  mismatch:", line)
    assert score.checked >= 20
    assert score.rate >= 0.95, "\n".join(score.mismatches)
