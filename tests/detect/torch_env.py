"""A PyTorch (CPU) + py-spy environment of its own for the real collective job's tests.

torch is not a dependency of Goodput: the job under test is the user's program. It lives in
`.cache/torch-venv` (git-ignored), made once with `python -m venv` + pip and reused while its
marker names the same pins. Measured on the 2-core dev machine: 41 s to make (torch 2.13.0's
CPU wheel, 192 MB, and py-spy 0.4.3), then reused. `torch==2.13.0` is pinned exactly: a range
would take a multi-GB CUDA build from PyPI.
"""

from __future__ import annotations

from pathlib import Path

from tests.servers.side_env import run_step, side_python

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".cache" / "torch-venv"
PINS = ("torch==2.13.0", "py-spy==0.4.3")
MARKER = "goodput-torch.json"


class TorchUnavailable(RuntimeError):
    """The environment could not be made; the message says why in one line."""


def torch_venv(venv: Path = VENV, timeout: float = 900.0) -> Path:
    """The environment's folder (bin/python, bin/py-spy): made on first use, then reused."""

    def install(pip: list[str]) -> None:
        run_step([*pip, *PINS], "pip install torch", timeout, TorchUnavailable)

    python = side_python(venv, PINS, MARKER, "GOODPUT_TORCH_PYTHON", install, TorchUnavailable)
    return python.parent.parent
