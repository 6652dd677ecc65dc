"""python -m goodput_agent.evals.independent --out DIR --seed N"""

from __future__ import annotations

import argparse
from pathlib import Path

from .suite import generate_suite


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the independent held-out suite.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    generate_suite(args.out, args.seed)
    print(f"wrote {sum(1 for _ in args.out.glob('*/expected.json'))} cases to {args.out}")


if __name__ == "__main__":
    main()
