"""Holistic Trace Analysis in an environment of its own, for the comparison test and benchmark.

HTA is the reference, not a dependency: it pulls pandas, JupyterLab and pytest, so it lives in
`.cache/hta-venv` (git-ignored), made once with `python -m venv` + pip and reused while its
marker file names the same pins. `GOODPUT_HTA_PYTHON` names an existing HTA python instead.

Pins: the three analyses compared (temporal breakdown, idle-time breakdown, comm-comp overlap)
run under numpy 2 and pandas 3 at these versions; HTA 0.5.0's critical-path analysis does not
(pandas 3 rejects its `drop(axis=1, columns=...)`), and nothing here uses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from tests.servers.side_env import run_step, side_python

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".cache" / "hta-venv"
RUNNER = Path(__file__).with_name("hta_runner.py")
RESULTS = REPO / ".cache" / "hta-results"
PINS = ("holistictraceanalysis==0.5.0", "numpy==2.4.6", "pandas==3.1.1")
MARKER = "goodput-hta.json"
ENV_VAR = "GOODPUT_HTA_PYTHON"


class HtaUnavailable(RuntimeError):
    """The HTA environment could not be made; the message says why in one line."""


def hta_python(venv: Path = VENV, timeout: float = 900.0) -> Path:
    """The python of an environment with HTA installed: made on first use, then reused."""
    def install(pip: list[str]) -> None:
        run_step([*pip, *PINS], f"pip install {' '.join(PINS)} (needs PyPI)", timeout,
                 HtaUnavailable)

    return side_python(venv, PINS, MARKER, ENV_VAR, install, HtaUnavailable)


def run_hta(traces: list[Path], *, one_job: bool = False, analyses: str | None = None,
            workers: int = 1, python: Path | None = None, timeout: float = 1800.0) -> dict:
    """Run tests/reference/hta_runner.py on `traces` with HTA's python; its JSON output."""
    cmd = [str(python or hta_python()), str(RUNNER), *map(str, traces), "--workers", str(workers)]
    if one_job:
        cmd.append("--one-job")
    if analyses:
        cmd += ["--analyses", analyses]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        raise HtaUnavailable(f"hta_runner.py failed (exit {proc.returncode}): {' | '.join(tail)}")
    return json.loads(proc.stdout)


def _key(trace: Path, analyses: str) -> str:
    h = hashlib.sha256()
    h.update(RUNNER.read_bytes())
    h.update(repr((PINS, os.environ.get(ENV_VAR, ""), analyses)).encode())
    with open(trace, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:32]


def run_hta_per_file(traces: list[Path], analyses: str, *, workers: int = 2,
                     python: Path | None = None) -> dict[Path, dict]:
    """HTA's result for each trace as a job of its own, by content: files with the same bytes are
    analysed once, and results are kept in .cache/hta-results (keyed by the runner's source,
    the pins and the file's bytes) so that a rerun costs nothing."""
    keys = {t: _key(t, analyses) for t in traces}
    RESULTS.mkdir(parents=True, exist_ok=True)
    todo = {k: t for t, k in keys.items() if not (RESULTS / f"{k}.json").exists()}
    if todo:
        out = run_hta(list(todo.values()), analyses=analyses, workers=workers, python=python)
        for k, job in zip(todo, out["jobs"], strict=True):
            (RESULTS / f"{k}.json").write_text(json.dumps(job))
    return {t: json.loads((RESULTS / f"{k}.json").read_text()) for t, k in keys.items()}
