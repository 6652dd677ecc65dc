"""Set aside a third of issue 24's new corpus entries before fixing anything, and score them once.

    python -m evals.realworld_holdout pick     # writes holdout_i24.txt (fixed seed; run once)
    python -m evals.realworld_holdout score --set holdout --root DIR [--root DIR ...]
    python -m evals.realworld_holdout score --set visible --root DIR

`pick` takes the entries added since the manifest at BASE_COMMIT (the corpus before issue 24)
and draws a third of them with a fixed seed. `score` investigates the chosen set with the same
scorer as tests/evals/test_realworld_manifest.py, reading each entry's text from the first root
that holds all of its files; entries whose text is in no root are counted as absent.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from goodput_agent.evals.corpus_manifest import MANIFEST, CorpusEntry, load
from goodput_agent.evals.realworld_score import Score, present

BASE_COMMIT = "b39f427"  # the manifest before issue 24's entries were added
HOLDOUT_LIST = Path(__file__).resolve().parent / "realworld" / "holdout_i24.txt"
SEED = 24


def new_entries() -> list[CorpusEntry]:
    repo = MANIFEST.parents[2]
    rel = MANIFEST.relative_to(repo).as_posix()
    old = subprocess.run(["git", "-C", str(repo), "show", f"{BASE_COMMIT}:{rel}"],
                         check=True, capture_output=True, text=True).stdout
    old_ids = {CorpusEntry.model_validate_json(ln).id for ln in old.splitlines() if ln.strip()}
    return [e for e in load() if e.id not in old_ids]


def held_out_ids() -> set[str]:
    if not HOLDOUT_LIST.is_file():
        return set()
    return {ln.strip() for ln in HOLDOUT_LIST.read_text().splitlines()
            if ln.strip() and not ln.startswith("#")}


def pick() -> list[str]:
    ids = sorted(e.id for e in new_entries())
    chosen = sorted(random.Random(SEED).sample(ids, len(ids) // 3))
    header = (f"# issue 24 held-out entries: {len(chosen)} of {len(ids)} new ones, "
              f"random.Random({SEED}).sample; not read while fixing\n")
    HOLDOUT_LIST.write_text(header + "".join(f"{i}\n" for i in chosen))
    return chosen


def score(which: str, roots: list[Path]) -> Score:
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger

    held = held_out_ids()
    chosen = [e for e in new_entries() if (e.id in held) == (which == "holdout")]
    result = Score()
    with tempfile.TemporaryDirectory() as tmp, Ledger(Path(tmp) / "l.duckdb") as ledger:
        for i, entry in enumerate(chosen):
            base = next((b for r in roots if (b := present(r, entry)) is not None), None)
            if base is None:
                result.absent.append(entry.id)
                continue
            bundle = Path(tmp) / f"b{i}"
            for f in entry.files:
                (bundle / f.path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(base / f.path, bundle / f.path)
            result.judge(entry, investigate_bundle(bundle, ledger))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.realworld_holdout")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("pick")
    sc = sub.add_parser("score")
    sc.add_argument("--set", choices=("holdout", "visible"), required=True)
    sc.add_argument("--root", type=Path, action="append", required=True)
    args = parser.parse_args(argv)
    if args.cmd == "pick":
        print(f"{len(pick())} entries held out -> {HOLDOUT_LIST}")
        return 0
    result = score(args.set, args.root)
    print(f"{args.set}: decisive {result.checked - len(result.mismatches)}/{result.checked}, "
          f"{len(result.absent)} without text", *result.mismatches, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
