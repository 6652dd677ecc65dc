"""An independent second generator of held-out incident bundles, written from the bundle
contract and real samples (not from evals/generator.py); generated at scoring time, never
shipped, never tuned on. Besides the base families (one per class of the taxonomy), shapes.py
holds the real-world shapes of issue 24 (classes 1-11: long logs, kubectl tables, user-space
GPU faults, host-memory kills announced by others, partial bundles, serving engines other than
vLLM, copies wrapped or escaped on their way). Their answer keys may carry max_confidence: the
most confidence the bundle supports (evals/scorer.py counts a verdict above it as wrong)."""

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
