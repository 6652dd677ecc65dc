"""Accelerator memory exhausted as XLA reports it (JAX, TensorFlow, torch_xla; GPU or TPU): the
same class as CUDA's OOM, whether it comes as an exception, a bare exception line or a log line;
and a serving engine that says it is short of GPU memory.

The lines are fixtures written here in the wordings openxla's error catalogue (E0100, E0101,
E1000) and TensorFlow's BFC allocator print; real ones were read in a fresh set of public
threads (JAX on GPU, JAX and torch_xla on TPU), whose text stays outside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.core.events import Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.job_log import PARSER

MESSAGES = [
    "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4770354232 bytes.",
    "RESOURCE_EXHAUSTED: Failed to allocate request for 1.00GiB (1073741824B) on device "
    "ordinal 0",
    "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space "
    "hbm. Used 21.90G of 7.48G hbm. Exceeded hbm capacity by 14.42G.",
    "RESOURCE_EXHAUSTED: Compilation failure: Aborting compilation early because it's "
    "unlikely to have enough memory. Requires 3.84T, has 90.96G available.",
    "RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00M. That "
    "was not possible. There are 6.43M free.; (0x0x1_HBM0)",
    "RESOURCE_EXHAUSTED: Error loading program 'jit_step': Attempting to reserve 29.49G at "
    "the bottom of memory. That was not possible. There are 147.64M free.",
    "OOM when allocating tensor with shape[64,2016,9,9] and type float on "
    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
]
EXCEPTIONS = ["jaxlib.xla_extension.XlaRuntimeError", "RuntimeError", "ValueError",
              "tensorflow.python.framework.errors_impl.ResourceExhaustedError"]


def _primary(tmp_path: Path, text: str) -> list:
    p = tmp_path / "out.log"
    p.write_text(text)
    assert PARSER.sniff(text, "out.log"), "a file holding this line is a job log"
    return [e for e in PARSER.parse(p, ParseContext(rel_path="out.log")).events
            if e.role == Role.primary]


@pytest.mark.parametrize("message", MESSAGES)
@pytest.mark.parametrize("exc", EXCEPTIONS)
def test_an_xla_oom_raised_is_the_accelerators_memory(tmp_path: Path, exc: str,
                                                      message: str) -> None:
    traceback = ("Traceback (most recent call last):\n"
                 '  File "/opt/train.py", line 101, in <module>\n'
                 "    state, loss = train_step(state, batch)\n"
                 f"{exc}: {message}\n")
    for text in (traceback, f"{exc}: {message}\n"):
        [e] = _primary(tmp_path, text)
        assert e.category == "gpu_oom", text
        assert e.summary.startswith("accelerator out of memory (XLA)"), e.summary


@pytest.mark.parametrize("prefix", [
    "2020-10-22 02:48:58 10.128.0.33 [3]   (1) ",  # torch_xla's client log, worker 3
    "2018-06-08 17:26:00.908130: W tensorflow/core/framework/op_kernel.cc:1202] OP_REQUIRES "
    "failed at tile_ops.cc:123 : ",  # TensorFlow's glog line
    "[rank5]: ",
])
@pytest.mark.parametrize("message", [
    "Resource exhausted: Attempting to allocate 180.59M. That was not possible. There are "
    "142.58M free.; (0x3x0_HBM1)",
    "Resource exhausted: OOM when allocating tensor with shape[16,1,892800,8] and type float "
    "on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
])
def test_an_xla_oom_logged_is_the_accelerators_memory(tmp_path: Path, prefix: str,
                                                      message: str) -> None:
    [e] = _primary(tmp_path, f"step 10 loss 2.31\n{prefix}{message}\n")
    assert e.category == "gpu_oom"
    assert e.locator.line_start == 2


@pytest.mark.parametrize("line", [
    "[07/08/2025-19:47:15] [TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1: "
    "Executor creation failed due to insufficient GPU memory.",
    "RuntimeError: Engine init failed: not enough free GPU memory for the KV cache",
])
def test_a_serving_engine_short_of_gpu_memory_says_so(tmp_path: Path, line: str) -> None:
    [e] = _primary(tmp_path, f"loading weights\n{line}\n")
    assert e.category == "gpu_oom"
    assert e.summary.startswith("accelerator out of memory (the serving engine)"), e.summary


def test_the_host_allocators_oom_is_the_hosts(tmp_path: Path) -> None:
    [e] = _primary(tmp_path, (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[100000,4096] and type float on /job:localhost/replica:0/task:0/"
        "device:CPU:0 by allocator cpu\n"))
    assert e.category == "host_oom"


@pytest.mark.parametrize("line", [
    # gRPC's status of the same name, about a message's size
    "grpc._channel._InactiveRpcError: RESOURCE_EXHAUSTED: Received message larger than max "
    "(5000000 vs. 4194304)",
    # scoped vector memory a kernel asked for: the compiled kernel's size, not the model's
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory "
    "space vmem while allocating on stack for %fusion.18",
])
def test_other_exhaustion_is_not_the_accelerators_memory(tmp_path: Path, line: str) -> None:
    assert all(e.category != "gpu_oom" for e in _primary(tmp_path, line + "\n"))
