"""A PyTorch (CPU) + py-spy environment of its own for the real collective job's tests.

torch is not a dependency of Goodput: the job under test is the user's program. It lives in
`.cache/torch-venv` (git-ignored), made once with `python -m venv` + pip and reused while its
marker names the same pins. Measured on the 2-core dev machine: 41 s to make (torch 2.13.0's
CPU wheel, 192 MB, and py-spy 0.4.3), then reused. `torch==2.13.0` is pinned exactly: a range
would take a multi-GB CUDA build from PyPI.
"""

from __future__ import annotations

import fcntl
import json
import sys
from pathlib import Path

from tests.reference.hta_env import HtaUnavailable, _run

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".cache" / "torch-venv"
PINS = ("torch==2.13.0", "py-spy==0.4.3")
MARKER = "goodput-torch.json"


class TorchUnavailable(RuntimeError):
    """The environment could not be made; the message says why in one line."""


def _ready(venv: Path) -> bool:
    try:
        marker = json.loads((venv / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("pins") == list(PINS) and (venv / "bin" / "py-spy").exists()


def torch_venv(venv: Path = VENV, timeout: float = 900.0) -> Path:
    """The environment's folder (bin/python, bin/py-spy): made on first use, then reused."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / "torch-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one maker at a time (parallel test runs)
        if not _ready(venv):
            try:  # the same runner as HTA's environment (one line on failure)
                _run([sys.executable, "-m", "venv", "--clear", str(venv)], "python -m venv",
                     120)
                _run([str(venv / "bin" / "pip"), "install", "-q", *PINS],
                     "pip install torch", timeout)
            except HtaUnavailable as exc:
                raise TorchUnavailable(str(exc)) from None
            (venv / MARKER).write_text(json.dumps({"pins": list(PINS)}))
    return venv
