"""A python environment of its own for a reference tool or a test server (HTA, llama.cpp's
server): made once under `.cache/` with `python -m venv` and pip, and reused while its marker
file names the same pins; an environment variable may name an existing python instead. A step
that fails raises the caller's error with one line saying why."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def env_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def run_step(cmd: list[str], what: str, timeout: float, error: type[Exception],
             env: dict[str, str] | None = None) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        raise error(f"{what} took over {timeout:.0f} s") from e
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines()
                 if ln.strip() and not ln.startswith("WARNING")]
        raise error(f"{what} failed (exit {proc.returncode}): "
                    f"{lines[-1] if lines else 'no output'}")


def side_python(venv: Path, pins: Sequence[str], marker: str, env_var: str,
                install: Callable[[list[str]], None], error: type[Exception]) -> Path:
    """The environment's python, made on first use: `install(pip_argv)` runs the pip steps."""
    if override := os.environ.get(env_var):
        if not Path(override).exists():
            raise error(f"{env_var}={override} does not exist")
        return Path(override)

    def ready() -> bool:
        try:
            return json.loads((venv / marker).read_text()).get("pins") == list(pins) and \
                env_python(venv).exists()
        except (OSError, ValueError):
            return False

    if ready():
        return env_python(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several test processes or a benchmark may ask at once
        if ready():
            return env_python(venv)
        run_step([sys.executable, "-m", "venv", "--clear", str(venv)], "python -m venv", 120,
                 error)
        install([str(env_python(venv)), "-m", "pip", "install", "--quiet",
                 "--disable-pip-version-check"])
        (venv / marker).write_text(json.dumps({"pins": list(pins)}))
    return env_python(venv)
