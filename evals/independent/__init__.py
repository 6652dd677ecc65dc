"""An independent second generator of held-out incident bundles, written from the bundle
contract and real samples (not from evals/generator.py); generated at scoring time, never
shipped, never tuned on."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from .suite import generate_suite

SEED = 14


def generated_suite(seed: int = SEED) -> Path:
    """The suite in a temp folder removed when the process exits."""
    out = Path(tempfile.mkdtemp(prefix="goodput-independent-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    return generate_suite(out, seed)


__all__ = ["SEED", "generate_suite", "generated_suite"]
