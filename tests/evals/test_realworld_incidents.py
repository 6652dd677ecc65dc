"""The complete multi-file real incidents of evals/realworld/incidents/: several artifacts of
one public thread or of one project's shipped test fixture, each kept verbatim with its URL in
SOURCE.json and the thread's resolution in label.json. Each folder is investigated as one
bundle (a copy in tmp) without error; decisive labels (category, and node and rank where the
thread established them) match at 95 % or better."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from tests.evals.sched_corpus import METADATA, Score, check_label_fields, incident_dirs


def _artifacts(incident: Path) -> set[str]:
    return {p.relative_to(incident).as_posix() for p in incident.rglob("*")
            if p.is_file() and p.name not in METADATA}


def test_every_incident_names_the_source_of_each_file_and_its_resolution() -> None:
    incidents = incident_dirs()
    assert len(incidents) >= 20
    problems = []
    for incident in incidents:
        sources = json.loads((incident / "SOURCE.json").read_text())["files"]
        files = _artifacts(incident)
        if len(files) < 2:
            problems.append(f"{incident.name}: an incident holds several artifacts")
        if set(sources) != files:
            problems.append(f"{incident.name}: SOURCE.json lists {sorted(sources)}, "
                            f"the folder holds {sorted(files)}")
        problems += [f"{incident.name}/{rel}: no public source URL"
                     for rel, url in sources.items() if not url.startswith("https://github.com/")]
        label = json.loads((incident / "label.json").read_text())
        problems += check_label_fields(incident.name, label)
    assert not problems, "\n".join(problems)


def test_every_incident_is_investigated_and_decisive_labels_match(tmp_path: Path) -> None:
    score = Score()
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for incident in incident_dirs():
            bundle = tmp_path / incident.name
            shutil.copytree(incident, bundle, ignore=shutil.ignore_patterns(*METADATA))
            report = investigate_bundle(bundle, ledger)
            files = _artifacts(incident)
            assert set(report.unread) <= files
            for unread in report.unread:
                assert report.unread_reasons.get(unread), f"{incident.name}/{unread}: no reason"
            label = json.loads((incident / "label.json").read_text())
            score.judge(incident.name, label, report)
    print(f"\ndecisive incidents: {score.checked - len(score.mismatches)}/{score.checked}")
    for line in score.mismatches:
        print("  mismatch:", line)
    assert score.checked >= 15
    assert score.rate >= 0.95, "\n".join(score.mismatches)
